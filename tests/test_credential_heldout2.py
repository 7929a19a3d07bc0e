"""The second and third held-out credential corpora (benchmarks/common/credential_heldout2.py, _heldout3.py) and
redaction.py's --heldout2 and --heldout3.

The second corpus was committed before any rule was measured on it and its halves fixed by a seeded shuffle: a change to
either would move the report half's figure without a rule changing, so both are pinned here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common.credential_heldout2 import (FORMATS, LOOKALIKES, heldout2_corpus, lookalike_corpus, split,
                                                   split_lookalikes)

ROOT = Path(__file__).resolve().parents[1]

# The develop halves as committed with the corpus (3eebc44); the report halves are the rest.
DEVELOP = ("tencent-cloud-secret-key", "hetzner-cloud-token", "pagerduty-api-key", "launchdarkly-sdk-key",
           "cohere-api-key", "deepseek-api-key", "elevenlabs-api-key", "pinecone-api-key", "ngrok-authtoken", "s3cfg",
           "wgetrc", "terraform-tfvars", "env-unusual-names", "laravel-app-key", "redis-requirepass",
           "ldap-bind-password", "smb-password", "url-password-other-schemes", "wireguard-private-key",
           "openvpn-static-key", "minisign-secret-key", "bip39-seed-phrase", "bitcoin-wif-key", "vault-unseal-key",
           "kaggle-json", "google-refresh-token", "gmail-app-password")
DEVELOP_LOOKALIKES = ("uuid-request-id", "base64-image", "npm-integrity", "poetry-lock-hash", "cargo-lock-checksum",
                      "requirements-hash", "sha256sum-output", "sri-integrity", "placeholder-stars",
                      "pgp-public-key-block", "x509-certificate", "wireguard-public-key", "bitcoin-address",
                      "mac-and-ipv6", "stripe-object-ids", "mime-base64", "s3-listing", "token-usage",
                      "oauth-client-id", "public-jwk", "password-policy")


def test_the_halves_are_the_ones_committed_with_the_corpus():
    develop, report = split()
    assert develop == DEVELOP and set(report) == set(FORMATS) - set(DEVELOP) and len(report) == 28
    develop, report = split_lookalikes()
    assert develop == DEVELOP_LOOKALIKES and set(report) == set(LOOKALIKES) - set(DEVELOP_LOOKALIKES)


def test_every_secret_is_in_its_text_and_the_corpus_is_the_same_each_time():
    samples = list(heldout2_corpus())
    assert len(samples) == 12 * len(FORMATS) == 660
    assert all(secret in text for _, secret, text in samples)
    assert samples == list(heldout2_corpus())
    assert list(lookalike_corpus()) == list(lookalike_corpus()) and len(list(lookalike_corpus())) == 168


def test_heldout2_reports_both_halves_and_the_lookalikes_of_a_tree():
    """The benchmark as a user runs it, in a process of its own, on this tree's redact."""
    done = subprocess.run([sys.executable, "benchmarks/safety/redaction.py", "--heldout2"], cwd=ROOT, check=True,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    report = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    assert (report["develop"]["samples"], report["report"]["samples"], report["all"]["samples"]) == (324, 336, 660)
    assert report["lookalikes develop"]["texts"] == report["lookalikes report"]["texts"] == 84
    assert 0 < report["report"]["caught"] < 336  # neither nothing nor everything: the figure measures something
    assert "MISSED [" in done.stdout


def test_heldout_and_heldout2_are_separate_runs():
    done = subprocess.run([sys.executable, "benchmarks/safety/redaction.py", "--heldout", "--heldout2"], cwd=ROOT,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 2 and "--heldout, --heldout2, --heldout3, --heldout4 and --heldout5 are separate runs" in done.stderr


def test_heldout3_reports_the_third_corpus_whole_as_held_out():
    done = subprocess.run([sys.executable, "benchmarks/safety/redaction.py", "--heldout3"], cwd=ROOT, check=True,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    report = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    assert "develop" not in report and report["report"]["samples"] == report["all"]["samples"] == 300
    assert report["lookalikes report"]["texts"] == 80 and "lookalikes develop" not in report
