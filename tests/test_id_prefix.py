"""Short id prefixes, as git takes them: wherever the CLI accepts a memory id, a unique prefix of
4+ hex digits will do; an ambiguous one lists the candidates; tables show the shortest unique
prefix (8 characters or more). The store resolves a prefix with an index range query.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore, NotFoundError, ValidationError
from localmem.cli import main

REPO = Path(__file__).resolve().parents[1]
TWIN_A = "abcd1234-a000-4000-8000-000000000001"  # the same first 9 characters
TWIN_B = "abcd1234-b000-4000-8000-000000000002"
LONER = "f00dbabe-0000-4000-8000-000000000003"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "120")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store("first twin: the billing database is PostgreSQL", id=TWIN_A, tags=["twins"])
        store.store("second twin: the event log stays in MongoDB", id=TWIN_B, tags=["twins"])
        store.store("a memory on its own", id=LONER, tags=["twins"])
    return path


def cli(capsys: pytest.CaptureFixture[str], db: Path, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--db", str(db), "--embedder", "hash", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_every_id_argument_takes_a_unique_prefix(capsys, db: Path) -> None:
    code, out, err = cli(capsys, db, "get", "f00d", "--json")
    assert code == 0, err
    assert json.loads(out)["id"] == LONER
    code, out, err = cli(capsys, db, "update", "F00DBABE", "--importance", "0.9", "--json")  # any case
    assert code == 0, err
    assert json.loads(out)["memory"]["importance"] == 0.9
    code, out, err = cli(capsys, db, "associate", "abcd1234a", "abcd1234-b", "--json")  # hyphens optional
    assert code == 0, err
    edge = json.loads(out)
    assert (edge["memory1_id"], edge["memory2_id"]) == (TWIN_A, TWIN_B)
    code, out, err = cli(capsys, db, "delete", "f00db")
    assert code == 0, err
    assert out.strip() == f"deleted {LONER}"  # the full id of what was deleted


def test_edge_commands_take_prefixes_too(capsys, db: Path) -> None:
    code, out, err = cli(capsys, db, "associate", "f00d", "abcd1234-a", "--json")
    assert code == 0, err
    code, out, err = cli(capsys, db, "dissociate", "f00d", "abcd1234a", "--json")
    assert code == 0, err
    assert json.loads(out)["removed"] == 1
    code, out, err = cli(capsys, db, "supersede", "abcd1234-a", "--id", "abcd1234-b", "--json")
    assert code == 0, err
    body = json.loads(out)
    assert (body["superseded_memory_id"], body["memory_id"]) == (TWIN_A, TWIN_B)
    code, out, err = cli(capsys, db, "supersede", "abcd", "new text")
    assert code == 2 and "ambiguous" in err


def test_an_ambiguous_prefix_lists_the_candidates_and_changes_nothing(capsys, db: Path) -> None:
    code, out, err = cli(capsys, db, "delete", "abcd")
    assert code == 2 and out == ""
    assert "prefix abcd is ambiguous" in err and "candidates:" in err
    assert TWIN_A in err and TWIN_B in err and "first twin" in err and "second twin" in err
    with MemoryStore(db, embedder="hash") as store:
        assert store.health()["memory_count"] == 3


@pytest.mark.parametrize("text, code, message", [
    ("abc", 2, "too short: give at least 4 hex digits"),
    ("xyz1", 2, "is not a memory id or id prefix"),
    ("1234", 1, "no memory id starts with 1234"),
])
def test_bad_prefixes_say_what_is_wrong(capsys, db: Path, text: str, code: int, message: str) -> None:
    result, out, err = cli(capsys, db, "get", text)
    assert result == code and message in err and out == ""


def test_tables_show_the_shortest_unique_prefix_and_it_resolves(capsys, db: Path) -> None:
    code, out, err = cli(capsys, db, "by-tag", "twins")
    assert code == 0, err
    shown = {line.split()[0] for line in out.splitlines()[1:] if line and not line.startswith("(")}
    assert shown == {"abcd1234-a", "abcd1234-b", "f00dbabe"}  # 8 characters, longer where they must be
    for prefix in shown:
        code, out, err = cli(capsys, db, "get", prefix, "--json")
        assert code == 0, err
        assert json.loads(out)["id"].startswith(prefix)


def test_the_store_resolves_prefixes_by_an_index_range(db: Path) -> None:
    from localmem.errors import AmbiguousIdError

    with MemoryStore(db, embedder="hash") as store:
        assert store.resolve_id("abcd1234-a") == TWIN_A
        assert store.resolve_id(TWIN_B.upper()) == TWIN_B  # a full id comes back canonical
        with pytest.raises(AmbiguousIdError) as ambiguous:
            store.resolve_id("abcd1234")
        assert ambiguous.value.candidates == [TWIN_A, TWIN_B] and ambiguous.value.code == 400
        with pytest.raises(NotFoundError):
            store.resolve_id("0000")
        assert store.short_ids([TWIN_A, LONER]) == {TWIN_A: "abcd1234-a", LONER: "f00dbabe"}
        plan = " ".join(row[3] for row in store.conn.execute(
            "EXPLAIN QUERY PLAN " + store.sql["memory_ids_by_prefix"], {"prefix": "abcd", "limit": 11}))
        assert "USING COVERING INDEX" in plan and "(id>? AND id<?)" in plan, plan
        # The Python API (and so HTTP and MCP) still takes full ids only: a prefix that is
        # unique today may name nothing, or two memories, tomorrow.
        with pytest.raises(ValidationError):
            store.get("abcd1234-a")


def test_prefix_through_the_real_entry_point(db: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_") or k == "LOCALMEM_DAEMON"}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "get", "abcd1234-b"],
                            capture_output=True, text=True, env=env, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].split() == ["id", TWIN_B]
    ambiguous = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "get", "abcd"],
                               capture_output=True, text=True, env=env, timeout=120, check=False)
    assert ambiguous.returncode == 2 and "Traceback" not in ambiguous.stderr and TWIN_A in ambiguous.stderr
