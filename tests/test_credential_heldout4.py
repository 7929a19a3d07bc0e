"""The fourth held-out credential corpus (benchmarks/common/credential_heldout4.py) and redaction.py's --heldout4.

The corpus was committed before any rule of its round was written or measured on it; a change to a text or to its
halves would move the figures without a rule changing, so both are pinned here by the hash committed with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common.credential_heldout4 import (FORMATS, LOOKALIKES, corpus_hash, heldout4_corpus,
                                                   lookalike4_corpus, split, split_lookalikes)

ROOT = Path(__file__).resolve().parents[1]
# Every text, secret, look-alike and both splits as committed with the corpus (branch redact16).
COMMITTED_HASH = "47a59c820af8e420cb8869761f898f42b74bc7cb981c9856fcd51e0500185d61"


def test_the_corpus_and_its_halves_are_the_ones_committed():
    assert corpus_hash() == COMMITTED_HASH
    develop, report = split()
    assert (len(develop), len(report)) == (21, 22) and set(develop) | set(report) == set(FORMATS)
    develop, report = split_lookalikes()
    assert (len(develop), len(report)) == (11, 11) and set(develop) | set(report) == set(LOOKALIKES)


def test_every_secret_is_in_its_text_and_no_lookalike_holds_one():
    samples = list(heldout4_corpus())
    assert len(samples) == 12 * len(FORMATS) == 516
    assert all(secret in text for _, secret, text in samples)
    secrets = {secret for _, secret, _ in samples}
    assert not any(secret in text for _, text in lookalike4_corpus() for secret in secrets)


def test_heldout4_reports_both_halves_and_the_lookalikes_of_a_tree():
    """The benchmark as a user runs it, in a process of its own, on this tree's redact."""
    done = subprocess.run([sys.executable, "benchmarks/safety/redaction.py", "--heldout4"], cwd=ROOT, check=True,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    report = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    assert (report["develop"]["samples"], report["report"]["samples"], report["all"]["samples"]) == (252, 264, 516)
    assert report["lookalikes develop"]["texts"] == report["lookalikes report"]["texts"] == 44
    assert 0 < report["report"]["caught"] < 264
