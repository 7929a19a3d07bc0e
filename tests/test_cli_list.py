"""``localmem list`` (browse recent memories: filters, sorts, paging, JSON) and ``by-tag --prefix``.

In-process ``main()`` for most cases (fast), one subprocess for the real entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore
from localmem.cli import main

REPO = Path(__file__).resolve().parents[1]
NOW = datetime.now(timezone.utc).replace(microsecond=0)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("list") / "memory.db"
    ids = {}
    with MemoryStore(path, embedder="hash") as store:
        def add(name: str, days: float, **fields: Any) -> None:
            when = max(NOW - timedelta(days=days), NOW.replace(hour=0, minute=0, second=0))  # still today
            if days > 1:
                when = NOW - timedelta(days=days)
            ids[name] = store.store(f"memory {name}", timestamp=when.isoformat(), **fields)
        add("old", 400, tags=["project:alpha"], type="Decision", importance=0.9)
        add("month", 20, tags=["project:beta"], type="Preference", importance=0.2)
        add("week", 3, tags=["project:alpha", "bug"], type="Insight", context="work")
        add("today", 0.01, tags=["Misc"], type="Context", importance=0.7)
    return {"path": path, "ids": ids}


def cli(capsys: pytest.CaptureFixture[str], db: dict[str, Any], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--db", str(db["path"]), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def names(db: dict[str, Any], page: dict[str, Any]) -> list[str]:
    by_id = {v: k for k, v in db["ids"].items()}
    return [by_id[m["id"]] for m in page["memories"]]


def listed(capsys, db, *args: str) -> dict[str, Any]:
    code, out, err = cli(capsys, db, "list", "--json", *args)
    assert code == 0, err
    return json.loads(out)


def test_list_is_newest_first_with_a_total(capsys, db) -> None:
    page = listed(capsys, db)
    assert names(db, page) == ["today", "week", "month", "old"]
    assert page["total"] == 4 and page["has_more"] is False and page["sort"] == "time_desc"
    assert set(page["memories"][0]) >= {"id", "content", "tags", "type", "timestamp", "context"}


def test_list_filters(capsys, db) -> None:
    assert names(db, listed(capsys, db, "--tags", "project")) == ["week", "month", "old"]  # prefix match
    assert names(db, listed(capsys, db, "--tags", "project", "--tag-match", "exact")) == []
    assert names(db, listed(capsys, db, "--tags", "project:alpha,bug", "--tag-mode", "all")) == ["week"]
    assert names(db, listed(capsys, db, "--tags", "misc")) == ["today"]  # case-insensitive
    assert names(db, listed(capsys, db, "--type", "decision,preference")) == ["month", "old"]
    assert names(db, listed(capsys, db, "--context", "work")) == ["week"]
    assert names(db, listed(capsys, db, "--since", "last 30 days")) == ["today", "week", "month"]
    assert names(db, listed(capsys, db, "--until", (NOW - timedelta(days=10)).isoformat())) == ["month", "old"]
    assert names(db, listed(capsys, db, "--since", "today", "--until", "today")) == ["today"]
    day = (NOW - timedelta(days=400)).date().isoformat()  # a bare date as --until includes that day
    assert names(db, listed(capsys, db, "--since", day, "--until", day)) == ["old"]
    page = listed(capsys, db, "--tags", "project", "--since", "last 30 days")
    assert names(db, page) == ["week", "month"]
    assert page["filters"]["tags"] == ["project"] and "since" in page["filters"]


def test_list_sorts_and_pages(capsys, db) -> None:
    assert names(db, listed(capsys, db, "--sort", "time_asc")) == ["old", "month", "week", "today"]
    assert names(db, listed(capsys, db, "--sort", "importance"))[:2] == ["old", "today"]
    first = listed(capsys, db, "--limit", "3")
    assert names(db, first) == ["today", "week", "month"]
    assert first["has_more"] is True and first["next_offset"] == 3
    second = listed(capsys, db, "--limit", "3", "--offset", "3")
    assert names(db, second) == ["old"] and second["has_more"] is False and "next_offset" not in second


def test_list_table_for_people(capsys, db) -> None:
    code, out, _ = cli(capsys, db, "list", "--limit", "2")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["id", "date", "type", "imp.", "content", "tags"]
    assert db["ids"]["today"][:8] in lines[1] and "memory today" in lines[1]
    assert lines[-1] == "(showing 1-2 of 4; next page: --offset 2)"


@pytest.mark.parametrize("args, message", [
    (["--since", "someday"], "'since' must be an ISO 8601 time or a time expression"),
    (["--type", "Nonsense"], "Invalid memory type 'Nonsense'"),
    (["--limit", "0"], "'limit' must be between 1 and 200"),
    (["--limit", "500"], "'limit' must be between 1 and 200"),
    (["--offset", "-1"], "'offset' must be a non-negative integer"),
    (["--since", "today", "--until", "yesterday"], "'since'"),
])
def test_list_bad_input_is_a_usage_error(capsys, db, args: list[str], message: str) -> None:
    code, out, err = cli(capsys, db, "list", *args)
    assert code == 2 and message in err and out == ""


def test_list_says_why_it_is_empty(capsys, db, tmp_path: Path) -> None:
    code, out, _ = cli(capsys, db, "list", "--tags", "nothing-like-this")
    assert code == 0 and out.strip() == "no memories match these filters"
    code, out, _ = cli(capsys, db, "list", "--offset", "10")
    assert code == 0 and "no memories past --offset 10 (4 memories in all)" in out
    fresh = {"path": tmp_path / "fresh.db"}
    MemoryStore(fresh["path"], embedder="hash").close()
    code, out, _ = cli(capsys, fresh, "list")
    assert code == 0 and out.startswith("no memories yet")


def test_by_tag_prefix_matches_like_recall(capsys, db) -> None:
    code, out, _ = cli(capsys, db, "by-tag", "project")
    assert code == 0
    assert "no memories tagged project" in out and "by-tag --prefix project" in out  # the way out is shown
    code, out, _ = cli(capsys, db, "by-tag", "--json", "--prefix", "project")
    page = json.loads(out)
    assert code == 0 and names(db, page) == ["old", "week", "month"]  # by-tag's order: importance first
    assert page["tag_match"] == "prefix"
    code, out, _ = cli(capsys, db, "by-tag", "--prefix", "project:alpha")
    assert code == 0 and db["ids"]["old"][:8] in out and db["ids"]["month"][:8] not in out


def test_list_through_the_real_entry_point(db) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_") or k == "LOCALMEM_DAEMON"}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db["path"]), "list", "--json",
                             "--limit", "1"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["memories"][0]["id"] == db["ids"]["today"]
