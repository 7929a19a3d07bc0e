"""``HookSettings``: what the hook injects and captures, from the environment or a mapping.

Standard library only (the forwarding client reads these before deciding to
load the store). Every variable is checked: a bad value is a ``ConfigError``
naming the variable, never silently replaced by the default.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from ..errors import ConfigError
from .selection import (DEFAULT_CAP, DEFAULT_CLOSE, DEFAULT_LEAD, DEFAULT_MARGIN, DEFAULT_NOTE_FLOOR, DEFAULT_ORDER,
                        ORDERS)

ENV_PREFIX = "LOCALMEM_HOOK_"
_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"0", "false", "no", "off"})
# Read by the hook command itself (localmem/hooks/client.py), not settings of the answer.
CLIENT_VARIABLES = frozenset({"LOCALMEM_HOOK_DEADLINE", "LOCALMEM_HOOK_VERBOSE"})
_INT_RANGES = (("token_budget", 0, 100_000), ("max_memories", 1, 100), ("session_start_max", 1, 100),
               ("max_read_bytes", 1024, 1 << 34),
               ("max_line_bytes", 256, 1 << 30), ("max_lines", 1, 10_000_000))


@dataclass(frozen=True)
class HookSettings:
    """What ``answer_hook`` does; each field has an environment variable ``LOCALMEM_HOOK_<NAME>``.

    - ``token_budget``: the most an injected block may cost, in estimated tokens
      (``inject.estimate_tokens``, an overestimate); 0 turns injection off.
    - ``relevance_floor``: a memory is injected for a prompt only when recall's calibrated
      ``relevance`` is at least this, in [0, 1]; None: ``LOCALMEM_RELEVANCE_FLOOR`` when set, else
      the stand-out rule's own default (``selection.DEFAULT_FLOOR``, chosen on held-out folds).
    - ``max_memories``: at most this many memories in a prompt's block (the stand-out rule's cap).
    - ``standout_lead``: a prompt gets notes only when the best result's relevance leads the
      median of the other candidates by at least this (``selection.StandOut``), in [0, 1].
    - ``standout_close``: with the best, the others within this of it, in [0, 1].
    - ``standout_order``: which eligible notes fill ``max_memories``: ``recall`` (recall's first) or
      ``relevance`` (the highest relevance first).
    - ``standout_margin``: in recall's order, a note after the first only when recall's score of its
      second candidate is at least this times its first's, in [0, 1]; 0: no margin.
    - ``note_floor``: in recall's order, once the best clears the floor, the notes' own floor, in [0, 1].
    - ``session_start_max``: at most this many memories in the session-start block.
    - ``rules_path``: the capture noise-rules file (JSON); None: the user's
      ``$XDG_CONFIG_HOME/localmem/hook-rules.json`` when it exists, else the built-in rules.
    - ``project``: the project scope's name; None: from the payload's ``cwd``.
    - ``inject`` / ``capture``: turn either half off.
    - ``max_read_bytes``, ``max_line_bytes``, ``max_lines``: bounds of one capture's
      transcript read (the rest is read by the next run).
    """

    token_budget: int = 1500
    relevance_floor: float | None = None
    max_memories: int = DEFAULT_CAP
    standout_lead: float = DEFAULT_LEAD
    standout_close: float = DEFAULT_CLOSE
    standout_order: str = DEFAULT_ORDER
    standout_margin: float = DEFAULT_MARGIN
    note_floor: float = DEFAULT_NOTE_FLOOR
    session_start_max: int = 8
    rules_path: str | None = None
    project: str | None = None
    inject: bool = True
    capture: bool = True
    max_read_bytes: int = 32 * 1024 * 1024
    max_line_bytes: int = 2 * 1024 * 1024
    max_lines: int = 100_000

    def __post_init__(self) -> None:
        for name, low, high in _INT_RANGES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ConfigError(f"hook setting '{name}' must be an integer from {low} to {high}, got {value!r}")
        floor = self.relevance_floor
        if floor is not None and (isinstance(floor, bool) or not isinstance(floor, (int, float))
                                  or not math.isfinite(floor) or not 0.0 <= floor <= 1.0):
            raise ConfigError(f"hook setting 'relevance_floor' must be a number from 0 to 1, got {floor!r}")
        for name in ("standout_lead", "standout_close", "standout_margin", "note_floor"):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                    or not 0.0 <= value <= 1.0):
                raise ConfigError(f"hook setting '{name}' must be a number from 0 to 1, got {value!r}")
        if self.standout_order not in ORDERS:
            raise ConfigError(f"hook setting 'standout_order' must be one of {', '.join(ORDERS)}, "
                              f"got {self.standout_order!r}")
        for name in ("rules_path", "project"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip() or "\x00" in value):
                raise ConfigError(f"hook setting '{name}' must be a non-empty string, got {value!r}")
        for name in ("inject", "capture"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"hook setting '{name}' must be true or false, got {getattr(self, name)!r}")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "HookSettings":
        """Settings from a mapping of field names (a config file's section); unknown names refused."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(f"unknown hook setting(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return cls(**dict(values))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "HookSettings":
        """The defaults, overridden by ``LOCALMEM_HOOK_<FIELD>`` variables (``LOCALMEM_HOOK_TOKEN_BUDGET``…);
        an unknown ``LOCALMEM_HOOK_*`` variable is refused (the client's own two excepted)."""
        env = os.environ if environ is None else environ
        names = {ENV_PREFIX + f.name.upper() for f in fields(cls)}
        unknown = sorted(k for k in env if k.startswith(ENV_PREFIX) and k not in names and k not in CLIENT_VARIABLES)
        if unknown:  # a misspelt setting would otherwise be ignored without a word
            raise ConfigError(f"unknown hook setting variable(s): {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(names | CLIENT_VARIABLES))})")
        values: dict[str, Any] = {}
        for field in fields(cls):
            if field.name.startswith("_"):
                continue
            variable = ENV_PREFIX + field.name.upper()
            raw = env.get(variable)
            if raw is None or not raw.strip():
                continue
            values[field.name] = _parse(variable, raw.strip(), 0.0 if field.name == "relevance_floor"
                                        else field.default)
            try:
                cls(**{field.name: values[field.name]})  # checked alone, so the error names the variable
            except ConfigError as exc:
                raise ConfigError(f"{variable}: {exc.message}") from None
        return cls(**values)

    def with_changes(self, **changes: Any) -> "HookSettings":
        return replace(self, **changes)


def _parse(variable: str, raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        lowered = raw.lower()
        if lowered in _ON or lowered in _OFF:
            return lowered in _ON
        raise ConfigError(f"{variable} must be on/off (1/0, true/false), got {raw!r}")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{variable} must be an integer, got {raw!r}") from None
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{variable} must be a number, got {raw!r}") from None
    return raw
