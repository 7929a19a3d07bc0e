"""The fifth held-out credential corpus (benchmarks/common/credential_heldout5.py) and redaction.py's --heldout5.

The corpus was committed before any rule of its round was written or measured on it; a change to a text or to its
halves would move the figures without a rule changing, so both are pinned here by the hash committed with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common.credential_heldout5 import (FORMATS, LOOKALIKES, corpus_hash, heldout5_corpus,
                                                   lookalike5_corpus, split, split_lookalikes)

ROOT = Path(__file__).resolve().parents[1]
# Every text, secret, look-alike and both splits as committed with the corpus (branch redact17).
COMMITTED_HASH = "1ff7ffee73f58f8e820d1396955956cfc3e9675a338feedda506ded5ef20c7b5"


def test_the_corpus_and_its_halves_are_the_ones_committed():
    assert corpus_hash() == COMMITTED_HASH
    develop, report = split()
    assert (len(develop), len(report)) == (24, 25) and set(develop) | set(report) == set(FORMATS)
    develop, report = split_lookalikes()
    assert (len(develop), len(report)) == (9, 9) and set(develop) | set(report) == set(LOOKALIKES)


def test_every_secret_is_in_its_text_and_no_lookalike_holds_one():
    samples = list(heldout5_corpus())
    assert len(samples) == 12 * len(FORMATS) == 588
    assert all(secret in text for _, secret, text in samples)
    secrets = {secret for _, secret, _ in samples}
    assert not any(secret in text for _, text in lookalike5_corpus() for secret in secrets)


def test_heldout5_reports_both_halves_and_the_lookalikes_of_a_tree():
    """The benchmark as a user runs it, in a process of its own, on this tree's redact."""
    done = subprocess.run([sys.executable, "benchmarks/safety/redaction.py", "--heldout5"], cwd=ROOT, check=True,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    report = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    assert (report["develop"]["samples"], report["report"]["samples"], report["all"]["samples"]) == (288, 300, 588)
    assert report["lookalikes develop"]["texts"] == report["lookalikes report"]["texts"] == 36
    assert 0 < report["report"]["caught"] < 300
