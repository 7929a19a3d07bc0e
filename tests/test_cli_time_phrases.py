"""Issue 35's time phrases through the CLI (a subprocess at COLUMNS=80): recall understands
them, an ambiguous date says which reading it took, and store/update/supersede --timestamp
take the same expressions as list --since."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PHRASES = ["the week before last", "this past week", "last few days", "this morning", "yesterday morning",
           "3 weeks back", "mid-November", "Q3", "27/11/2026", "11/27/2026", "27.11.2026"]


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    env.pop("LOCALMEM_DB", None)
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("phrases") / "m.db"
    assert cli(path, "store", "physio said the knee is fine").returncode == 0
    return path


@pytest.mark.parametrize("phrase", PHRASES)
def test_recall_understands_the_phrase(db: Path, phrase: str) -> None:
    run = cli(db, "--json", "recall", "--time-query", phrase)
    assert run.returncode == 0, run.stderr
    assert "not understood" not in run.stderr
    window = json.loads(run.stdout)["time_window"]
    assert window["start"] is not None and window["end"] is not None and window["start"] < window["end"]


def test_an_ambiguous_date_says_which_reading(db: Path) -> None:
    run = cli(db, "--json", "recall", "--time-query", "04/05/2026")
    assert run.returncode == 0
    assert "read as day/month (04 May 2026)" in run.stderr
    assert "read as day/month" in " ".join(json.loads(run.stdout)["warnings"])
    listed = cli(db, "list", "--since", "04/05/2026")
    assert "since '04/05/2026' could be day/month or month/day" in listed.stderr


def test_store_update_and_supersede_take_time_expressions(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    yesterday = (datetime.now(timezone.utc) - timedelta(days=1)).date().isoformat()
    stored = cli(db, "--json", "store", "ran 5k", "--timestamp", "yesterday")
    assert stored.returncode == 0, stored.stderr
    memory = json.loads(stored.stdout)["memory"]
    assert memory["timestamp"].startswith(f"{yesterday}T00:00:00")
    assert "--timestamp 'yesterday' was read as" in stored.stderr
    assert [m["id"] for m in json.loads(cli(db, "--json", "list", "--since", "yesterday").stdout)["memories"]] \
        == [memory["id"]]

    updated = cli(db, "--json", "update", memory["id"], "--timestamp", "27/11/2026")
    assert updated.returncode == 0, updated.stderr
    assert json.loads(cli(db, "--json", "get", memory["id"]).stdout)["timestamp"].startswith("2026-11-27T00:00")

    replaced = cli(db, "--json", "supersede", memory["id"], "ran 10k", "--timestamp", "yesterday morning")
    assert replaced.returncode == 0, replaced.stderr
    new = json.loads(cli(db, "--json", "get", json.loads(replaced.stdout)["memory_id"]).stdout)
    assert new["timestamp"].startswith(f"{yesterday}T00:00:00")

    bad = cli(db, "store", "x", "--timestamp", "whenever")
    assert bad.returncode == 2
    assert "--timestamp must be an ISO 8601 time or a time expression" in bad.stderr
    assert "Traceback" not in bad.stderr
