"""Tag input is read one way everywhere (issue 35's traps): commas, semicolons and spaces
separate tags, a leading '#' is dropped, and every change but a comma split is said.

Through each interface where the traps were seen: the CLI as a subprocess at COLUMNS=80,
HTTP through a real uvicorn server, MCP through the SDK client over stdio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import uvicorn

from localmem import MemoryStore
from localmem.http.app import create_app
from localmem.tags import parse_tags
from tests.serving import in_thread

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("given, tags, noted", [
    ("work;urgent", ["work", "urgent"], True),
    ("work urgent", ["work", "urgent"], True),
    ("#work", ["work"], True),
    ("a,b", ["a", "b"], False),  # commas are the documented separator: no note
    ("a, b", ["a", "b"], False),
    (["Work", "#work", "x;y"], ["Work", "x", "y"], True),
    ("c#", ["c#"], False),  # only a leading '#' goes
    ("project:alpha", ["project:alpha"], False),
])
def test_parse_tags_rule(given: Any, tags: list[str], noted: bool) -> None:
    parsed = parse_tags(given)
    assert parsed.tags == tags
    assert bool(parsed.notes) == noted


def test_parse_tags_notes_name_the_input_and_are_bounded() -> None:
    note = parse_tags("#work urgent").notes[0]
    assert "'#work urgent'" in note and "'work', 'urgent'" in note and "'#'" in note and "semicolons" in note
    many = parse_tags([f"a{i} b{i}" for i in range(50)]).notes
    assert len(many) == 6 and "45 more" in many[-1]


# -- CLI ------------------------------------------------------------------------------------


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    env.pop("LOCALMEM_DB", None)
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, env=env, cwd=db.parent, timeout=120)


def test_cli_tags_split_and_said_on_stderr(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    stored = cli(db, "--json", "store", "knee sore after the run", "--tags", "work;urgent",
                 "--tags", "#health", "--tags", "left knee")
    assert stored.returncode == 0, stored.stderr
    assert "'work;urgent' was read as 'work', 'urgent'" in stored.stderr
    assert "'#health' was read as 'health'" in stored.stderr
    assert json.loads(stored.stdout)["memory"]["tags"] == ["work", "urgent", "health", "left", "knee"]
    for args in (("by-tag", "#work"), ("list", "--tags", "work urgent"), ("recall", "--tags", "#health")):
        run = cli(db, *args)
        assert run.returncode == 0, run.stderr
        assert "knee sore" in run.stdout, args
        assert "warning: 'tags':" in run.stderr, args


def test_cli_recall_word_after_tags_is_warned(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert cli(db, "store", "blood pressure 120/80", "--tags", "health,important").returncode == 0
    run = cli(db, "recall", "--tags", "health", "important")
    assert run.returncode == 0
    assert "'important' is read as the query, not as a tag" in run.stderr
    assert "--tags health,important" in run.stderr
    quiet = cli(db, "recall", "important", "--tags", "health")
    assert quiet.returncode == 0 and "read as the query" not in quiet.stderr


def test_cli_typo_option_gets_command_usage_and_suggestion(tmp_path: Path) -> None:
    run = cli(tmp_path / "m.db", "recall", "--tgas", "health", "knee")
    assert run.returncode == 2
    assert run.stderr.startswith("usage: localmem recall")
    assert "unrecognized arguments: --tgas (did you mean --tags?)" in run.stderr


def test_cli_backup_into_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert cli(db, "store", "one memory").returncode == 0
    run = cli(db, "backup", "backups/")
    assert run.returncode == 0, run.stderr
    folder = tmp_path / "backups"
    assert folder.is_dir(), "a path ending in '/' is a folder"
    (made,) = folder.iterdir()
    assert made.name.startswith("m-backup-") and made.suffix == ".db"
    assert str(Path("backups") / made.name) in run.stdout
    again = cli(db, "--json", "backup", "backups")  # an existing folder, no slash: inside it too
    if again.returncode == 0:
        assert '"into_folder"' in again.stdout and len(list(folder.iterdir())) == 2
    else:  # made within the same second: the same name, refused rather than replaced
        assert "already exists" in again.stderr and len(list(folder.iterdir())) == 1


# -- HTTP -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def http() -> Any:
    store = MemoryStore(":memory:", embedder="hash")
    app = create_app(store)
    with in_thread(lambda port: uvicorn.Config(app, log_config=None, lifespan="off")) as url:
        with httpx.Client(base_url=url, timeout=30) as client:
            yield client
    store.close()


def test_http_store_and_filters_read_tags_one_way(http: httpx.Client) -> None:
    stored = http.post("/memory", json={"content": "renew the passport in March", "tags": "admin,travel"})
    assert stored.status_code == 201, stored.text
    assert stored.json()["memory"]["tags"] == ["admin", "travel"]
    assert "warnings" not in stored.json()
    odd = http.post("/memory", json={"content": "dentist appointment Tuesday", "tags": ["#health", "work;urgent"]})
    assert odd.status_code == 201
    body = odd.json()
    assert body["memory"]["tags"] == ["health", "work", "urgent"]
    assert len(body["warnings"]) == 2 and "'#health' was read as 'health'" in body["warnings"][0]

    found = http.get("/recall", params={"tags": "admin,nothing"}).json()
    assert [r["memory"]["content"] for r in found["results"]] == ["renew the passport in March"]
    semi = http.get("/recall", params={"tags": "work;urgent", "tag_mode": "all"}).json()
    assert [r["memory"]["content"] for r in semi["results"]] == ["dentist appointment Tuesday"]
    assert any("'work;urgent'" in w for w in semi["warnings"])
    excluded = http.get("/recall", params={"exclude_tags": "#health"}).json()
    assert "dentist appointment Tuesday" not in [r["memory"]["content"] for r in excluded["results"]]
    assert any("'exclude_tags'" in w for w in excluded["warnings"])
    by_tag = http.get("/memory/by-tag", params={"tags": "#travel"}).json()
    assert by_tag["tags"] == ["travel"] and by_tag["count"] == 1 and by_tag["warnings"]

    patched = http.patch(f"/memory/{body['memory_id']}", json={"tags": "teeth health"})
    assert patched.status_code == 200
    assert patched.json()["memory"]["tags"] == ["teeth", "health"] and patched.json()["warnings"]
    batch = http.post("/memory/batch", json={"memories": [{"content": "a", "tags": "x y"}, {"content": "b"}]})
    assert batch.status_code == 201 and batch.json()["warnings"][0].startswith("Memory at index 0: ")


# -- MCP ------------------------------------------------------------------------------------


def test_mcp_tags_read_one_way_and_said(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "localmem", "--db", str(tmp_path / "m.db"), "--embedder", "hash", "mcp"],
        cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)})

    async def scenario() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            stored = await client.call_tool("store_memory", {"content": "call mum on Sunday",
                                                             "tags": ["#family", "weekly chores"]})
            assert not stored.is_error, stored.content[0].text
            assert "Warning: 'tags': '#family' was read as 'family'" in stored.content[0].text
            assert len(stored.structured_content["warnings"]) == 2
            found = await client.call_tool("recall_memory", {"tags": ["family;weekly"], "tag_mode": "all"})
            assert [r["memory_id"] for r in found.structured_content["results"]] == [
                stored.structured_content["memory_id"]]
            assert any("'family;weekly'" in w for w in found.structured_content["warnings"])
            listed = await client.call_tool("recall_memory", {"tags": ["chores"], "exhaustive": True})
            assert listed.structured_content["count"] == 1

    anyio.run(scenario)
