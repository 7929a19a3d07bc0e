"""What the two stateful replication models share: their budget (CI's derandomized examples, or fresh ones
from ``LOCALMEM_STATEFUL_SEED`` as the benchmarks run them) and a last check once an example's steps are done."""

from __future__ import annotations

import os
from collections.abc import Sequence

from hypothesis import HealthCheck, Phase, settings


def stateful_settings(examples: int, steps: int,
                      suppress: Sequence[HealthCheck] = (HealthCheck.too_slow,)) -> tuple[settings, str | None]:
    """Hypothesis settings for a model run in CI with ``examples`` × ``steps`` (``LOCALMEM_STATEFUL_EXAMPLES``
    and ``_STEPS`` override them) and the seed of fresh random examples (``LOCALMEM_STATEFUL_SEED``; None in
    CI, which runs derandomized ones)."""
    seed = os.environ.get("LOCALMEM_STATEFUL_SEED")
    return settings(max_examples=int(os.environ.get("LOCALMEM_STATEFUL_EXAMPLES") or examples),
                    stateful_step_count=int(os.environ.get("LOCALMEM_STATEFUL_STEPS") or steps), deadline=None,
                    suppress_health_check=list(suppress), database=None, derandomize=seed is None,
                    phases=[Phase.explicit, Phase.generate]), seed


class ConvergesAtTeardown:
    """After an example's last step (and only when it set up its stores), ``check_converged``."""

    def teardown(self) -> None:
        try:
            if hasattr(self, "stores"):
                self.check_converged()
        finally:
            super().teardown()
