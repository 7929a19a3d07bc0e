"""What the CLI shows is true and fits an 80-column terminal (issue 35, "Truth in what is shown").

A superseded memory is called superseded (not expired) by get, stats and list; list and recall
in history mode mark each memory that is not current, and list says what its state filter hid;
recall at 80 columns shows a long content whole with its date; times are to the minute without
microseconds (JSON keeps ISO 8601); get, stats and the demo keep within 80 columns.
Runs ``python -m localmem`` as a subprocess with COLUMNS=80.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore

REPO = Path(__file__).resolve().parents[1]
KNEE = ("Went running along the river this morning, 5 km in 31 minutes; my right knee was slightly "
        "sore after the second kilometre, so next week I will do intervals on the bike instead")
MICROSECONDS = re.compile(r"\d{2}:\d{2}:\d{2}\.\d{6}")


def run(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "COLUMNS")}
    env.update(PYTHONPATH=str(REPO), COLUMNS=str(columns), TZ="UTC", PYTHONIOENCODING="utf-8")
    result = subprocess.run([sys.executable, "-m", "localmem", *args], capture_output=True, text=True,
                            encoding="utf-8", env=env, timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    return result


def too_wide(text: str, columns: int = 80) -> list[str]:
    return [line for line in text.splitlines() if len(line) > columns]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    path = tmp_path_factory.mktemp("shown") / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        ids = {
            "knee": store.store(KNEE, tags=["health", "running"], timestamp="2026-11-20T07:45:00Z"),
            "old": store.store("My dentist is Dr. Kim on Elm Street", tags=["health"]),
            "gone": store.store("The gym on 5th Avenue is open until 22:00", t_invalid="2020-01-01T00:00:00Z"),
            "shelved": store.store("Old packing list for the 2019 camping trip"),
        }
        store.update(ids["shelved"], archived=True)
        ids["new"] = store.supersede(ids["old"], "My dentist is now Dr. Patel at the Riverside clinic",
                                     tags=["health"])["memory_id"]
    return {"path": str(path), **ids}


def test_get_calls_a_superseded_memory_superseded_and_fits(db: dict[str, str]) -> None:
    out = run("--db", db["path"], "get", db["old"][:8]).stdout
    state = " ".join(out[out.index("state:"):].split("outgoing")[0].split())
    assert state.startswith(f"state: superseded by {db['new']}"), state
    assert "expired" not in out
    assert not too_wide(out), too_wide(out)
    assert not MICROSECONDS.search(out) and re.search(r"timestamp +\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", out), out
    # the one that expired by its own t_invalid is still called expired
    assert "state: expired since 2020-01-01 00:00 UTC" in run("--db", db["path"], "get", db["gone"]).stdout
    # JSON keeps the stored ISO 8601 time and the status
    as_json = json.loads(run("--db", db["path"], "get", db["old"], "--json").stdout)
    assert as_json["state"]["status"] == "superseded" and "T" in as_json["timestamp"]


def test_stats_names_states_truly_in_human_times(db: dict[str, str]) -> None:
    out = run("--db", db["path"], "stats").stdout
    flat = " ".join(out.split())
    assert "5 (2 current; recall hides 3: 1 superseded, 1 expired, 1 archived;" in flat, out
    assert not too_wide(out), too_wide(out)
    assert not MICROSECONDS.search(out)
    assert re.search(r"time span +2026-11-20 07:45 UTC to \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", out), out


def test_list_hides_what_is_not_current_and_says_so(db: dict[str, str]) -> None:
    out = run("--db", db["path"], "list").stdout
    assert "Dr. Patel" in out and "Dr. Kim" not in out and "gym" not in out
    footer = " ".join(out.split("\n\n")[-1].split())
    assert "(showing 1-2 of 2; 3 not shown: 1 superseded, 1 expired, 1 archived; --state all shows them)" \
        in footer, out
    every = run("--db", db["path"], "list", "--state", "all", columns=200).stdout
    short_new = db["new"][:8]
    assert re.search(rf"\[superseded by {short_new}\] My dentist is Dr\. Kim", every), every
    assert "[expired 2020-01-01] The gym" in every and "[archived] Old packing list" in every
    assert re.search(r"\n[0-9a-f]{8}  [0-9-]{10}  \w+ +[0-9.]+  My dentist is now Dr\. Patel", every)  # unmarked
    only = run("--db", db["path"], "list", "--state", "superseded", columns=200).stdout
    assert "Dr. Kim" in only and "Dr. Patel" not in only and "gym" not in only
    page = json.loads(run("--db", db["path"], "list", "--state", "all", "--json").stdout)
    assert page["state_counts"] == {"current": 2, "superseded": 1, "expired": 1, "archived": 1,
                                    "not_yet_valid": 0}
    assert {m["id"]: m["state"]["status"] for m in page["memories"]}[db["old"]] == "superseded"


def test_recall_history_marks_what_is_not_current(db: dict[str, str]) -> None:
    out = run("--db", db["path"], "recall", "who is my dentist", "--state-mode", "history").stdout
    flat = " ".join(out.split())
    assert f"[superseded by {db['new'][:8]}] My dentist is Dr. Kim" in flat, out
    assert "] My dentist is now" not in flat  # the current one is not marked


def test_recall_at_80_columns_shows_the_answer_and_its_date(db: dict[str, str]) -> None:
    out = run("--db", db["path"], "recall", "knee after running", "--limit", "3").stdout
    assert not too_wide(out), too_wide(out)
    words = " ".join(out.split())
    # the whole content, wrapped over lines in its column (its end was cut off before)
    assert "my right knee was slightly sore after the second kilometre" in words, out
    assert "intervals on the bike instead" in words, out
    assert "2026-11-20" in out  # its date, no time or microseconds
    assert out.splitlines()[0].split()[:5] == ["#", "score", "id", "date", "content"]


def test_demo_fits_80_columns(tmp_path: Path) -> None:
    out = run("--embedder", "hash", "demo").stdout
    assert "== Hybrid search" in out and "[superseded]" in out
    assert not too_wide(out), too_wide(out)
    assert not MICROSECONDS.search(out)
