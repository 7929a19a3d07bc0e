"""The ``localmem`` command line: every command, exit codes, JSON output,
the lossless export/import round trip, doctor detect + repair, and the demo.

Most tests call ``main([...])`` in-process (fast); a few run
``python -m localmem`` as a subprocess to check the real entry point, exit
codes and that expected errors never print a traceback.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from array import array
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore
from localmem.cli import main
from localmem.settings import choose_embedder, default_db_path, embedder_spec_for

REPO = Path(__file__).resolve().parents[1]
MISSING_ID = "00000000-0000-4000-8000-000000000000"
NOW = datetime.now(timezone.utc).replace(microsecond=0)


# -- helpers ---------------------------------------------------------------


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], db: Path):
    """``cli("store", "text", ...)`` runs ``main`` in-process on the test db with the hash embedder."""

    def run(*args: str, db_path: Path | None = None, stdin: str | None = None,
            embedder: str | None = "hash") -> Run:
        capsys.readouterr()
        argv = ["--db", str(db_path or db)]
        if embedder is not None:
            argv += ["--embedder", embedder]
        saved = sys.stdin
        if stdin is not None:
            sys.stdin = io.StringIO(stdin)
        try:
            code = main(argv + list(args))
        finally:
            sys.stdin = saved
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def subprocess_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONIOENCODING"] = "utf-8"
    return env


def run_module(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "localmem", *args], input=stdin, capture_output=True,
                          text=True, encoding="utf-8", env=subprocess_env(), timeout=120, check=False)


def stored(cli, content: str, *args: str) -> str:
    result = cli("store", content, *args)
    assert result.code == 0, result.err
    return result.out.strip()


# -- subprocess: the real entry point --------------------------------------


def test_module_store_get_and_exit_codes(db: Path) -> None:
    base = ["--db", str(db), "--embedder", "hash"]
    made = run_module(*base, "store", "Chose PostgreSQL for the primary database",
                      "--tags", "project:alpha,database", "--importance", "0.9")
    assert made.returncode == 0, made.stderr
    memory_id = made.stdout.strip()
    assert len(memory_id) == 36

    got = run_module(*base, "get", memory_id, "--json")  # --json after the command
    assert got.returncode == 0, got.stderr
    record = json.loads(got.stdout)
    assert record["id"] == memory_id
    assert record["tags"] == ["project:alpha", "database"]
    assert record["importance"] == 0.9

    missing = run_module(*base, "get", MISSING_ID)
    assert missing.returncode == 1
    assert missing.stderr.startswith("error: ")
    assert "Traceback" not in missing.stderr

    invalid = run_module(*base, "store", "x", "--importance", "2")
    assert invalid.returncode == 2
    assert "importance" in invalid.stderr and "Traceback" not in invalid.stderr

    usage = run_module(*base, "recall", "--limit", "lots")
    assert usage.returncode == 2
    assert "usage:" in usage.stderr


def test_module_export_import_pipe_round_trip(tmp_path: Path) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(source, embedder="hash") as store:
        first = store.store("Prefers pytest over unittest — ünïcödé ✓", tags=["preference"])
        second = store.store("Runs tests with pytest -q", tags=["testing"])
        store.associate(first, second, "RELATES_TO", 0.4)
    exported = run_module("--db", str(source), "export")
    assert exported.returncode == 0, exported.stderr
    imported = run_module("--db", str(target), "--embedder", "hash", "import", "-", stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert "imported 2 memories and 1 edge (" in imported.stdout
    again = run_module("--db", str(target), "export", "-")  # embedder taken from the file
    assert again.returncode == 0, again.stderr
    assert again.stdout == exported.stdout


def test_module_demo_with_hash_embedder() -> None:
    result = run_module("--embedder", "hash", "demo")
    assert result.returncode == 0, result.stderr
    for title in ("Hybrid search", "Tag-scoped query", "Time window", "Superseded memory",
                  "Relation expansion"):
        assert title in result.stdout
    assert "Moved alpha's background jobs from Celery" in result.stdout
    assert "Traceback" not in result.stderr


# -- usage and global options ----------------------------------------------


def test_no_command_and_unknown_command_are_usage_errors(cli) -> None:
    assert cli().code == 2
    assert cli("frobnicate").code == 2
    assert cli("store").code == 2  # missing CONTENT
    assert main(["--help"]) == 0
    assert main(["--version"]) == 0


def test_json_flag_before_or_after_the_command(cli) -> None:
    memory_id = stored(cli, "Deploys go through GitHub Actions")
    after = cli("get", memory_id, "--json")
    first = cli("--json", "get", memory_id)
    assert after.code == first.code == 0
    assert after.json() == first.json()
    assert after.json()["content"] == "Deploys go through GitHub Actions"


def test_db_after_the_command_overrides(cli, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    memory_id = stored(cli, "Stored in the default test db")
    result = cli("get", memory_id, "--db", str(other))
    assert result.code == 1  # other.db does not exist
    assert "no database" in result.err


def test_default_db_path(tmp_path: Path) -> None:
    assert default_db_path({"LOCALMEM_DB": "/x/y.db"}) == "/x/y.db"
    assert default_db_path({"XDG_DATA_HOME": str(tmp_path)}) == str(tmp_path / "localmem" / "memory.db")
    home = os.path.join(os.path.expanduser("~"), ".local", "share", "localmem", "memory.db")
    assert default_db_path({}) == home
    assert default_db_path({"XDG_DATA_HOME": "relative/dir"}) == home


def test_default_db_from_environment(cli, db: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LOCALMEM_DB", str(db))
    capsys.readouterr()
    assert main(["--embedder", "hash", "store", "Lives in $LOCALMEM_DB"]) == 0
    memory_id = capsys.readouterr().out.strip()
    with MemoryStore(db, embedder="hash") as store:
        assert store.get(memory_id)["content"] == "Lives in $LOCALMEM_DB"


def test_embedder_defaults_to_the_one_the_file_recorded(cli, db: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    stored(cli, "made with the hash embedder")
    assert choose_embedder(None, str(db)) == "hash"
    assert choose_embedder("none", str(db)) == "none"
    monkeypatch.setenv("LOCALMEM_EMBEDDER", "hash:64")
    assert choose_embedder(None, str(db)) == "hash:64"
    assert choose_embedder(None, str(db.parent / "absent.db")) == "hash:64"
    monkeypatch.delenv("LOCALMEM_EMBEDDER")
    assert choose_embedder(None, str(db.parent / "absent.db")) == "auto"
    assert embedder_spec_for("hash-64") == "hash:64"
    assert embedder_spec_for("all-MiniLM-L6-v2") == "all-MiniLM-L6-v2"
    # no --embedder at all: recall on the hash db still has its vector channel
    result = cli("recall", "hash embedder", "--json", embedder=None)
    assert result.code == 0, result.err
    assert result.json()["vector_search"]["enabled"] is True


def test_wrong_dimension_embedder_is_a_config_error(cli) -> None:
    stored(cli, "384 dimensions")
    result = cli("recall", "x", embedder="hash:64")
    assert result.code == 1
    assert "dimension" in result.err


# -- store / get / update / delete / associate / by-tag --------------------


def test_store_with_every_option(cli) -> None:
    ts = "2025-01-15T10:30:00+00:00"
    result = cli("store", "  Chose PostgreSQL over MongoDB.  ", "--tags", "project:alpha", "--tags", "db, sql",
                 "--importance", "0.8", "--confidence", "0.7", "--type", "decision", "--timestamp", ts,
                 "--metadata", '{"ticket": "A-1", "nested": {"ü": [1, 2.5, null]}}',
                 "--context", "work", "--json")
    assert result.code == 0, result.err
    body = result.json()
    assert body["status"] == "success"
    record = body["memory"]
    assert record["id"] == body["memory_id"]
    assert record["content"] == "Chose PostgreSQL over MongoDB."
    assert record["tags"] == ["project:alpha", "db", "sql"]
    assert record["type"] == "Decision"
    assert (record["importance"], record["confidence"]) == (0.8, 0.7)
    assert record["timestamp"] == ts
    assert record["metadata"] == {"ticket": "A-1", "nested": {"ü": [1, 2.5, None]}}
    assert record["context"] == "work"


def test_store_reads_stdin_and_rejects_bad_input(cli) -> None:
    result = cli("store", "-", stdin="From standard input\n")
    assert result.code == 0
    assert cli("get", result.out.strip(), "--json").json()["content"] == "From standard input"
    for args in (["   "], ["x", "--importance", "abc"], ["x", "--importance", "-0.1"],
                 ["x", "--metadata", "{not json"], ["x", "--metadata", "[1, 2]"],
                 ["x", "--type", "NoSuchType"], ["x", "--timestamp", "yesterday-ish"]):
        bad = cli("store", *args)
        assert bad.code == 2, args
        assert bad.err.startswith("error: "), args
    assert "valid JSON" in cli("store", "x", "--metadata", "{").err
    stats = cli("stats", "--json").json()
    assert stats["memory_count"] == 1  # bad input stored nothing


def test_get_human_output_and_errors(cli) -> None:
    memory_id = stored(cli, "Prefers dark mode in every editor", "--tags", "preference",
                       "--metadata", '{"source": "chat"}')
    human = cli("get", memory_id)
    assert human.code == 0
    assert memory_id in human.out and "Prefers dark mode in every editor" in human.out
    assert "preference" in human.out and '"source": "chat"' in human.out
    missing = cli("get", MISSING_ID)
    assert missing.code == 1 and missing.err == f"error: Memory not found: {MISSING_ID}\n"
    assert cli("get", "not-a-uuid").code == 2


def test_update(cli) -> None:
    memory_id = stored(cli, "Uses black for formatting", "--tags", "python,style")
    result = cli("update", memory_id, "--content", "Uses ruff format for formatting", "--tags", "python",
                 "--importance", "0.9", "--metadata", '{"changed": true}', "--json")
    assert result.code == 0, result.err
    record = result.json()["memory"]
    assert record["content"] == "Uses ruff format for formatting"
    assert record["tags"] == ["python"]
    assert record["importance"] == 0.9
    assert record["metadata"] == {"changed": True}
    cleared = cli("update", memory_id, "--tags", "", "--json").json()["memory"]
    assert cleared["tags"] == []
    human = cli("update", memory_id, "--importance", "0.4")
    assert human.code == 0 and "0.40" in human.out
    assert cli("update", memory_id).code == 2  # nothing to update
    assert cli("update", memory_id, "--importance", "7").code == 2
    assert cli("update", MISSING_ID, "--importance", "0.5").code == 1
    assert cli("get", memory_id, "--json").json()["importance"] == 0.4


def test_delete(cli) -> None:
    first = stored(cli, "Short-lived memory")
    second = stored(cli, "Another memory")
    assert cli("associate", first, second).code == 0
    result = cli("delete", first, "--json")
    assert result.code == 0
    assert result.json() == {"status": "success", "memory_id": first, "deleted": True}
    assert cli("get", first).code == 1
    assert cli("delete", first).code == 1
    human = cli("delete", second)
    assert human.out.strip() == f"deleted {second}"
    stats = cli("stats", "--json").json()
    assert stats["memory_count"] == 0 and stats["edge_count"] == 0


def test_associate(cli) -> None:
    first = stored(cli, "Invoice export timed out")
    second = stored(cli, "Added an index on orders(created_at)")
    result = cli("associate", first, second, "--type", "leads_to", "--strength", "0.8", "--json")
    assert result.code == 0, result.err
    assert result.json() == {"status": "success", "memory1_id": first, "memory2_id": second,
                             "relation_type": "LEADS_TO", "strength": 0.8}
    human = cli("associate", first, second, "--type", "RELATES_TO")
    assert human.code == 0 and f"{first} -[RELATES_TO]-> {second}" in human.out
    assert cli("associate", first, second, "--type", "PRECEDED_BY").code == 2  # not authorable
    assert cli("associate", first, first).code == 2
    assert cli("associate", first, second, "--strength", "1.5").code == 2
    assert cli("associate", first, MISSING_ID).code == 1
    assert cli("stats", "--json").json()["edge_types"] == {"LEADS_TO": 1, "RELATES_TO": 1}


def test_by_tag_paging(cli) -> None:
    for i in range(5):
        stored(cli, f"Alpha note number {i}", "--tags", "project:alpha", "--importance", str(0.1 * (i + 1)))
    stored(cli, "Beta note", "--tags", "project:beta")
    page = cli("by-tag", "PROJECT:ALPHA", "--limit", "2", "--json")
    assert page.code == 0
    body = page.json()
    assert body["count"] == 2 and body["has_more"] is True and body["next_offset"] == 2
    assert [m["content"] for m in body["memories"]] == ["Alpha note number 4", "Alpha note number 3"]
    last = cli("by-tag", "project:alpha", "--limit", "2", "--offset", "4", "--json").json()
    assert last["count"] == 1 and last["has_more"] is False
    both = cli("by-tag", "project:alpha", "project:beta", "--json").json()
    assert both["count"] == 6
    human = cli("by-tag", "project:alpha", "--limit", "2")
    assert "Alpha note number 4" in human.out and "--offset 2" in human.out
    assert "no memories" in cli("by-tag", "nothing-here").out
    assert cli("by-tag", "x", "--offset", "-1").code == 2


# -- recall ----------------------------------------------------------------


@pytest.fixture
def recall_db(cli) -> dict[str, str]:
    old = (NOW - timedelta(days=90)).isoformat()
    recent = (NOW - timedelta(days=3)).isoformat()
    return {
        "postgres": stored(cli, "Chose PostgreSQL over MongoDB for the primary database",
                           "--tags", "project:alpha,database", "--importance", "0.9", "--timestamp", old),
        "bug": stored(cli, "Bug: the invoice export timed out on the orders database query",
                      "--tags", "project:alpha,bug", "--timestamp", recent),
        "beta": stored(cli, "Beta dashboard reads from the database replica",
                       "--tags", "project:beta", "--timestamp", recent),
        "style": stored(cli, "Prefers tabs over spaces", "--tags", "preference", "--timestamp", old),
    }


def test_recall_json_body(cli, recall_db: dict[str, str]) -> None:
    result = cli("recall", "database decisions", "--limit", "3", "--json")
    assert result.code == 0, result.err
    body = result.json()
    assert body["status"] == "success"
    assert body["count"] == len(body["results"]) <= 3
    assert body["results"][0]["id"] == recall_db["postgres"]
    assert body["vector_search"]["enabled"] is True
    for item in body["results"]:
        assert {"id", "memory", "final_score", "match_type", "score_components", "relations"} <= set(item)


def test_recall_table(cli, recall_db: dict[str, str]) -> None:
    result = cli("recall", "database decisions")
    assert result.code == 0
    header = result.out.splitlines()[0].split()
    assert header == ["#", "score", "id", "date", "content", "tags", "match"]
    assert recall_db["postgres"][:8] in result.out  # short ids (test_cli_output.py has the layout)
    assert "vector search on" in result.out


def test_recall_filters(cli, recall_db: dict[str, str]) -> None:
    def ids(*args: str) -> set[str]:
        run = cli("recall", *args, "--json")
        assert run.code == 0, run.err
        return {r["id"] for r in run.json()["results"]}

    assert ids("database", "--tags", "project:alpha", "--limit", "10") == {recall_db["postgres"], recall_db["bug"]}
    assert ids("database", "--tags", "project", "--tag-match", "exact", "--limit", "10") == set()
    assert ids("database", "--tags", "project:alpha,bug", "--tag-mode", "all", "--limit", "10") == {recall_db["bug"]}
    assert recall_db["beta"] not in ids("database", "--exclude-tags", "project:beta", "--limit", "10")
    assert ids("--time-query", "last 30 days", "--limit", "10") == {recall_db["bug"], recall_db["beta"]}
    start = (NOW - timedelta(days=100)).isoformat()
    end = (NOW - timedelta(days=30)).isoformat()
    assert ids("--start", start, "--end", end, "--limit", "10") == {recall_db["postgres"], recall_db["style"]}
    body = cli("recall", "--sort", "time_asc", "--limit", "10", "--json").json()
    assert body["sort"] == "time_asc"


def test_recall_param_passthrough_and_errors(cli, recall_db: dict[str, str]) -> None:
    every = cli("recall", "database", "--param", "adaptive_floor=false", "--json").json()
    body = cli("recall", "database", "--param", "min_score=0.99", "--json").json()
    assert body["score_filter"]["min_score"] == 0.99
    assert body["count"] < every["count"]
    assert all(r["final_score"] >= 0.99 for r in body["results"])
    debug = cli("recall", "database", "--param", "state_debug=true", "--param", "queries=database",
                "--param", "queries=tabs", "--json")
    assert debug.code == 0, debug.err
    assert debug.json()["queries"] == ["database", "tabs"]
    assert cli("recall", "x", "--param", "no_such_parameter=1").code == 2
    assert cli("recall", "x", "--param", "missing-equals").code == 2
    assert cli("recall", "x", "--start", "not a time").code == 2
    assert cli("recall", "x", "--sort", "sideways").code == 2  # argparse choices


def test_recall_table_says_when_the_score_floor_left_results_out() -> None:
    from localmem.cli.recall import recall_lines

    def summary(gate: dict) -> str:
        return "\n".join(recall_lines({"results": [], "count": 0, "score_filter": gate}))

    floor = summary({"min_score": 0.0, "adaptive_floor": 0.61, "filtered_count": 3})
    assert "3 weaker results below the score floor left out (--param adaptive_floor=false keeps them)" in floor
    both = summary({"min_score": 0.5, "adaptive_floor": 0.61, "filtered_count": 1})
    assert "1 weaker result below the score floor left out" in both and "adaptive_floor=false" not in both
    assert "score floor" not in summary({"min_score": 0.0, "adaptive_floor": None, "filtered_count": 0})
    below = summary({"min_score": 0.9, "adaptive_floor": None, "filtered_count": 0, "candidates_below_min_score": 4})
    assert "4 candidates below min_score 0.9 left out" in below and "score floor" not in below


def test_recall_state_mode_and_expand_relations(cli, db: Path) -> None:
    with MemoryStore(db, embedder="hash") as store:
        old = store.store("Background jobs run on Celery with RabbitMQ", tags=["queue"])
        new = store.supersede(old, "Background jobs moved to Redis Streams", tags=["queue"])["memory_id"]
        latency = store.store("p95 latency dropped after the background jobs move", tags=["perf"])
        store.associate(new, latency, "LEADS_TO", 0.9)
    current = cli("recall", "background jobs Celery RabbitMQ", "--limit", "5", "--json").json()
    assert old not in {r["id"] for r in current["results"]}
    assert new in {r["id"] for r in current["results"]}
    history = cli("recall", "background jobs Celery RabbitMQ", "--limit", "5", "--state-mode", "history",
                  "--json").json()
    assert old in {r["id"] for r in history["results"]}
    expanded = cli("recall", "Redis Streams", "--limit", "1", "--expand-relations", "--json").json()
    assert expanded["expansion"]["enabled"] is True
    assert latency in {r["id"] for r in expanded["results"]}


def test_recall_degraded_without_vectors(cli) -> None:
    result = cli("store", "Keyword search still works without vectors", embedder="none")
    assert result.code == 0
    body = cli("recall", "keyword search", "--json", embedder="none").json()
    assert body["degraded"] is True and body["vector_search"]["enabled"] is False
    assert body["count"] == 1
    human = cli("recall", "keyword search", embedder="none")
    assert "vector search off" in human.out and "degraded" in human.out


def test_read_commands_need_an_existing_database(cli, tmp_path: Path) -> None:
    absent = tmp_path / "absent.db"
    for args in (["recall", "x"], ["get", MISSING_ID], ["export"], ["stats"], ["doctor"], ["by-tag", "x"]):
        result = cli(*args, db_path=absent)
        assert result.code == 1, args
        assert "no database" in result.err
    assert not absent.exists()


# -- stats -----------------------------------------------------------------


def test_stats(cli, recall_db: dict[str, str]) -> None:
    cli("associate", recall_db["postgres"], recall_db["bug"])
    body = cli("stats", "--json", "--top", "2").json()
    assert body["memory_count"] == 4 and body["edge_count"] == 1
    assert body["vector_count"] == body["embedding_count"] == body["fts_count"] == 4
    assert body["indexes_agree"] is True
    assert sum(body["types"].values()) == 4
    assert body["top_tags"][0] == {"tag": "project:alpha", "count": 2}
    assert len(body["top_tags"]) == 2
    assert body["edge_types"] == {"RELATES_TO": 1}
    assert body["contexts"] == {"default": 4}
    assert body["embedder"]["name"] == "hash"
    human = cli("stats")
    assert human.code == 0
    assert "project:alpha 2" in human.out and "agree" in human.out


# -- export / import -------------------------------------------------------


UNICODE = ("Ünïcödé ✓ 日本語のメモ 🧠 עברית e\u0301 line\u2028separator\u2029para\x85nel\ttab "
           "\"quotes\" \\ back")


def build_rich_store(path: Path) -> dict[str, str]:
    """A store exercising every field, vectors present and absent, and edges of every kind."""
    clock_now = datetime(2025, 3, 10, 10, 30, 15, 123456, tzinfo=timezone.utc)
    with MemoryStore(path, embedder="hash", clock=lambda: clock_now) as store:
        ids = {}
        ids["unicode"] = store.store(UNICODE, tags=["Ünï:Cödé/Deep", "emoji🧠"], importance=0.123456789,
                                     metadata={"nested": {"list": [1, 2.5, None, True, "ü"], "big": 2**60},
                                               "empty": {}, "text": "line\nbreak"},
                                     timestamp="2024-02-29T23:59:59.999999+00:00", context="work")
        ids["full"] = store.store("Every field set explicitly", tags=["a", "b:c"], importance=1.0,
                                  confidence=0.33, type="Decision", timestamp="2024-01-01T00:00:00+00:00",
                                  t_valid="2024-01-02T00:00:00+00:00", t_invalid="2030-01-01T00:00:00+00:00",
                                  metadata={"k": "v"})
        store.update(ids["full"], archived=True, relevance_score=0.25, summary="A custom summary",
                     last_accessed="2024-06-01T12:00:00+00:00")
        vector = [((i * 37) % 101 - 50) / 7.0 for i in range(384)]
        ids["vector"] = store.store("Explicit vector", embedding=vector, importance=0.0)
        ids["no_vector"] = store.store("Memory whose embedding was never computed")
        pk = store.conn.execute("SELECT pk FROM memories WHERE id = ?", (ids["no_vector"],)).fetchone()[0]
        with store.conn:
            store.conn.execute(store.sql["vector_codes_delete"], {"pk": pk})
            store.conn.execute(store.sql["embedding_delete"], {"pk": pk})
        ids["old"] = store.store("Jobs run on Celery", tags=["queue"])
        ids["new"] = store.supersede(ids["old"], "Jobs run on Redis Streams", reason="fewer services",
                                     tags=["queue"])["memory_id"]
        store.associate(ids["unicode"], ids["full"], "PREFERS_OVER", 0.75, reason="ü reason", context="x")
        store.associate(ids["full"], ids["vector"], "relates_to")
        pks = dict(store.conn.execute("SELECT id, pk FROM memories"))
        with store.conn:  # system edge types that associate() refuses
            store.conn.execute(store.sql["edge_upsert"], {
                "src": pks[ids["vector"]], "dst": pks[ids["unicode"]], "type": "PRECEDED_BY", "strength": 0.1,
                "updated_at": "2023-05-05T05:05:05.500000+00:00", "properties": '{"count":3}', "hlc": None, "now_ms": None})
            store.conn.execute(store.sql["edge_upsert"], {
                "src": pks[ids["unicode"]], "dst": pks[ids["vector"]], "type": "SIMILAR_TO", "strength": 0.93,
                "updated_at": "2023-05-06T00:00:00+00:00", "properties": '{"score":0.9312345}', "hlc": None, "now_ms": None})
    return ids


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def test_export_import_round_trip_is_lossless(cli, tmp_path: Path) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    ids = build_rich_store(source)
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"

    exported = cli("export", str(first), db_path=source, embedder=None)
    assert exported.code == 0, exported.err
    assert "exported 6 memories and 5 edges" in exported.out
    imported = cli("import", str(first), db_path=target, embedder="hash")
    assert imported.code == 0, imported.err
    assert "imported 6 memories and 5 edges" in imported.out
    again = cli("export", str(second), "--json", db_path=target, embedder=None)
    assert again.code == 0 and again.json()["memories"] == 6 and again.json()["edges"] == 5
    assert second.read_bytes() == first.read_bytes()

    lines = read_lines(first)
    assert [line["kind"] for line in lines] == ["header"] + ["memory"] * 6 + ["edge"] * 5
    assert lines[0]["memories"] == 6 and lines[0]["edges"] == 5 and lines[0]["embedder"] == "hash"
    memories = {line["id"]: line for line in lines if line["kind"] == "memory"}
    assert memories[ids["unicode"]]["content"] == UNICODE
    assert memories[ids["unicode"]]["metadata"]["nested"]["big"] == 2**60
    assert memories[ids["no_vector"]]["embedding"] is None
    stored_vector = memories[ids["vector"]]["embedding"]
    expected = array("f", [((i * 37) % 101 - 50) / 7.0 for i in range(384)]).tolist()
    assert stored_vector == expected
    assert memories[ids["full"]]["archived"] is True
    assert memories[ids["full"]]["summary"] == "A custom summary"
    assert memories[ids["full"]]["last_accessed"] == "2024-06-01T12:00:00+00:00"
    assert memories[ids["old"]]["t_invalid"] is not None
    edges = {(e["memory1_id"], e["relation_type"], e["memory2_id"]): e for e in lines if e["kind"] == "edge"}
    preceded = edges[(ids["vector"], "PRECEDED_BY", ids["unicode"])]
    assert preceded["updated_at"] == "2023-05-05T05:05:05.500000+00:00"
    assert preceded["properties"] == {"count": 3}
    assert edges[(ids["unicode"], "PREFERS_OVER", ids["full"])]["properties"] == {"reason": "ü reason",
                                                                                  "context": "x"}
    assert edges[(ids["old"], "INVALIDATED_BY", ids["new"])]["properties"] == {"reason": "fewer services"}

    with MemoryStore(source, embedder="hash") as a, MemoryStore(target, embedder="hash") as b:
        for memory_id in ids.values():
            assert a.get(memory_id) == b.get(memory_id)
        assert b.health()["indexes_agree"] is True
        # the imported copy is searchable through every index
        hit = b.recall("Redis Streams", limit=1)
        assert hit["results"][0]["id"] == ids["new"]
        assert b.by_tag(["ünï:cödé/deep"])["count"] == 1


def test_import_stdin_and_json_summary(cli, tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    build_rich_store(source)
    dump = cli("export", db_path=source, embedder=None).out
    result = cli("import", "-", "--json", stdin=dump)
    assert result.code == 0, result.err
    # The file's token codes come back with its vectors (export version 2); the one memory that had
    # none (its vector was given explicitly) is counted, and stderr says what adds them.
    assert result.json() == {"status": "success", "memories": 6, "edges": 5, "skipped": 0, "not_embedded": 0,
                             "without_token_codes": 1,
                             "why_without_token_codes": "the file carries none for them",
                             "mode": "all-or-nothing", "older_than_stored": {"count": 0, "ids": []},
                             "sync_stamps": {"taken": 6, "not_taken": {}},  # each memory: the exported version
                             "by_kind": {"memory": {"created": 6, "updated": 0, "unchanged": 0, "skipped": 0},
                                         "edge": {"created": 5, "updated": 0, "unchanged": 0, "skipped": 0}}}
    assert "1 memory came with the file's vectors and no usable token codes" in result.err
    assert "localmem reembed" in result.err


def memory_line(content: str, **fields: Any) -> str:
    return json.dumps({"kind": "memory", "content": content, **fields})


def test_import_bad_line_reports_its_number_and_writes_nothing_of_the_chunk(cli, tmp_path: Path) -> None:
    good = [memory_line(f"good memory {i}") for i in range(3)]
    cases = {
        "invalid JSON": (good + ["{oops"], 4),
        "importance": (good[:1] + [memory_line("bad", importance=3)] + good[1:], 2),
        "must be a JSON object": (good + ["[1, 2]"], 4),
        "unknown kind": (good + ['{"kind": "node"}'], 4),
        "Unknown memory field": (good + [memory_line("x", colour="red")], 4),
        "content": (good + ['{"kind": "memory", "tags": ["no content"]}'], 4),
        "Embedding must contain exactly 384": (good + [memory_line("x", embedding=[0.1, 0.2])], 4),
        "relation_type": (good + [json.dumps({"kind": "edge", "memory1_id": MISSING_ID,
                                              "memory2_id": MISSING_ID})], 4),
    }
    for index, (needle, (lines, bad_line)) in enumerate(cases.items()):
        path = tmp_path / f"case{index}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        db_path = tmp_path / f"case{index}.db"
        result = cli("import", str(path), db_path=db_path)
        assert result.code == 2, (needle, result.err)
        assert f"line {bad_line}:" in result.err, (needle, result.err)
        assert needle in result.err, (needle, result.err)
        assert "Traceback" not in result.err
        with MemoryStore(db_path, embedder="hash") as store:
            assert store.health()["memory_count"] == 0, needle


def test_chunked_import_keeps_earlier_chunks_and_names_the_line(cli, tmp_path: Path) -> None:
    lines = [memory_line(f"memory {i}") for i in range(5)] + [memory_line("bad", importance="high")]
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    result = cli("import", str(path), "--batch-size", "2", "--chunked")
    assert result.code == 2
    assert "line 6:" in result.err and "4 memories from earlier chunks" in result.err
    assert cli("stats", "--json").json()["memory_count"] == 4


def test_import_duplicates_and_skip_existing(cli, tmp_path: Path) -> None:
    memory_id = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
    path = tmp_path / "dup.jsonl"
    path.write_text(memory_line("one", id=memory_id) + "\n\n" + memory_line("two", id=memory_id) + "\n",
                    encoding="utf-8")
    result = cli("import", str(path))
    assert result.code == 2 and "line 3:" in result.err and "duplicate id" in result.err

    path.write_text(memory_line("one", id=memory_id) + "\n", encoding="utf-8")
    assert cli("import", str(path)).code == 0
    again = cli("import", str(path))
    assert again.code == 2 and "line 1:" in again.err and "already exists" in again.err
    skipped = cli("import", str(path), "--skip-existing", "--json")
    assert skipped.code == 0 and skipped.json()["skipped"] == 1 and skipped.json()["memories"] == 0


def test_import_edges_need_their_memories(cli, tmp_path: Path) -> None:
    first, second = "3f2504e0-4f89-41d3-9a0c-0305e82c3301", "3f2504e0-4f89-41d3-9a0c-0305e82c3302"
    edge = {"kind": "edge", "memory1_id": first, "memory2_id": second, "relation_type": "PRECEDED_BY",
            "strength": 0.2, "updated_at": "2024-01-01T00:00:00+00:00", "properties": {"count": 2}}
    path = tmp_path / "edges.jsonl"
    # the edge comes first in the file: edges are written after all memories
    path.write_text("\n".join([json.dumps(edge), memory_line("a", id=first), memory_line("b", id=second)]),
                    encoding="utf-8")
    result = cli("import", str(path), "--json")
    assert result.code == 0, result.err
    assert result.json()["edges"] == 1
    orphan = dict(edge, memory2_id=MISSING_ID)
    path.write_text(json.dumps(orphan), encoding="utf-8")
    missing = cli("import", str(path))
    assert missing.code == 2 and "line 1:" in missing.err and "not found" in missing.err
    bad = dict(edge, strength=7)
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert cli("import", str(path)).code == 2


def test_import_embedding_choices(cli, tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([
        memory_line("new data, no embedding key: embedded on import"),
        memory_line("exported without an embedding: stays without", embedding=None),
    ]), encoding="utf-8")
    assert cli("import", str(path)).code == 0
    stats = cli("stats", "--json").json()
    assert stats["memory_count"] == 2 and stats["memories_without_embedding"] == 1

    other = tmp_path / "other.db"
    assert cli("import", str(path), "--embed-missing", db_path=other).code == 0
    assert cli("stats", "--json", db_path=other).json()["memories_without_embedding"] == 0


def test_import_reembed_into_another_embedder(cli, tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    build_rich_store(source)
    dump = tmp_path / "dump.jsonl"
    assert cli("export", str(dump), db_path=source, embedder=None).code == 0
    small = tmp_path / "small.db"
    plain = cli("import", str(dump), db_path=small, embedder="hash:64")
    assert plain.code == 2 and "made by 'hash' (384 dimensions)" in plain.err and "--reembed" in plain.err
    result = cli("import", str(dump), "--reembed", db_path=small, embedder="hash:64")
    assert result.code == 0, result.err
    with MemoryStore(small, embedder="hash:64") as store:
        health = store.health()
        assert health["memory_count"] == 6 and health["memories_without_embedding"] == 0
        assert health["embedder"]["dimensions"] == 64 and health["indexes_agree"] is True


def test_import_progress_bar_and_missing_file(cli, tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(memory_line(f"memory {i}") for i in range(3)), encoding="utf-8")
    result = cli("import", str(path), "--progress")
    assert result.code == 0
    assert "importing [" in result.err and "3/3" in result.err
    quiet = cli("import", str(path), db_path=tmp_path / "quiet.db")
    assert quiet.err == ""  # stderr is not a terminal in tests
    assert cli("import", str(tmp_path / "absent.jsonl")).code == 1


# -- doctor ----------------------------------------------------------------


def corrupt(db: Path) -> dict[str, str]:
    """Break each derived index in a different memory; returns the ids concerned."""
    with MemoryStore(db, embedder="hash") as store:
        ids = {name: store.store(f"{name} memory about databases", tags=[f"topic:{name}", "shared"])
               for name in ("fts", "vector", "tags", "prefix", "embedding", "intact")}
        store.associate(ids["fts"], ids["intact"])
        pk = dict(store.conn.execute("SELECT id, pk FROM memories"))
        conn = store.conn
        conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (pk[ids["fts"]],))
        conn.execute("INSERT INTO memories_fts (rowid, content, tags) VALUES (9999, 'ghost', '')")
        conn.execute("DELETE FROM vector_codes WHERE pk = ?", (pk[ids["vector"]],))
        conn.execute("DELETE FROM memory_tags WHERE pk = ? AND tag = 'shared'", (pk[ids["tags"]],))
        conn.execute("DELETE FROM memory_tag_prefixes WHERE pk = ? AND prefix = 'topic'", (pk[ids["prefix"]],))
        conn.execute("DELETE FROM vector_codes WHERE pk = ?", (pk[ids["embedding"]],))
        conn.execute("DELETE FROM memory_embeddings WHERE pk = ?", (pk[ids["embedding"]],))
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("INSERT INTO edges (src, dst, type, strength, updated_at, properties) "
                     "VALUES (?, 8888, 'RELATES_TO', 0.5, '2024-01-01T00:00:00+00:00', '{}')", (pk[ids["intact"]],))
    return ids


def test_doctor_clean_database(cli) -> None:
    stored(cli, "A healthy memory", "--tags", "a:b")
    result = cli("doctor")
    assert result.code == 0
    assert "no problems found" in result.out
    body = cli("doctor", "--json").json()
    assert body["status"] == "ok" and body["problem_count"] == 0
    assert all(check["ok"] for check in body["checks"])


def test_doctor_detects_and_repairs(cli, db: Path) -> None:
    ids = corrupt(db)
    result = cli("doctor")
    assert result.code == 1
    for needle in ("no full-text (FTS) row", "full-text row belongs to no memory",
                   "tag rows do not match", "tag prefix rows do not match", "no vector-index row",
                   "no embedding", "edge points to a missing memory", "missing rows (edges: 1)"):
        assert needle in result.out, needle
    for key in ("fts", "vector", "tags", "prefix", "embedding"):
        assert ids[key] in result.out, key
    assert "--repair" in result.out

    body = cli("doctor", "--json").json()
    failed = {check["name"] for check in body["checks"] if not check["ok"]}
    assert failed == {"foreign_keys", "fts_missing", "fts_orphans", "tags", "tag_prefixes", "edges_dangling",
                      "vectors_missing", "embeddings_missing"}
    assert body["status"] == "problems"

    # before the repair, keyword search cannot find the memory without an FTS row
    assert ids["fts"] not in {r["id"] for r in cli("recall", "fts", "--json").json()["results"]
                              if r["match_type"] == "keyword"}
    repaired = cli("doctor", "--repair")
    assert repaired.code == 0, repaired.out
    assert "repair:" in repaired.out and "1 memory embedded" in repaired.out
    assert "1 dangling edge removed" in repaired.out
    assert "no problems remain" in repaired.out

    again = cli("doctor", "--json")
    assert again.code == 0 and again.json()["status"] == "ok"
    with MemoryStore(db, embedder="hash") as store:
        assert store.health()["indexes_agree"] is True
        assert store.recall("fts memory", limit=1)["results"][0]["id"] == ids["fts"]
        assert store.by_tag(["shared"])["count"] == 6
        assert store.health()["edge_count"] == 1  # the real edge survived


def test_doctor_json_repair_and_unavailable_embedder(cli, db: Path) -> None:
    corrupt(db)
    # with no embedder, the memory without an embedding is only a warning and cannot be re-embedded
    body = cli("doctor", "--repair", "--json", embedder="none")
    payload = json.loads(body.out)
    assert body.code == 0, payload
    assert payload["repair"]["memories_embedded"] == 0
    warnings = [c for c in payload["after_repair"] if not c["ok"]]
    assert [c["name"] for c in warnings] == ["embeddings_missing"]
    assert warnings[0]["severity"] == "warning"
    assert cli("doctor").code == 1  # with the hash embedder it is a problem again
    assert cli("doctor", "--repair").code == 0


def test_doctor_module_exit_code(db: Path) -> None:
    corrupt(db)
    found = run_module("--db", str(db), "doctor")
    assert found.returncode == 1 and "PROBLEM" in found.stdout
    fixed = run_module("--db", str(db), "doctor", "--repair")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


# -- demo ------------------------------------------------------------------


def test_demo_json_shows_each_feature(cli, tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    result = cli("demo", "--json", db_path=path)
    assert result.code == 0, result.err
    body = result.json()
    assert body["memories"] == 15 and body["degraded"] is False
    runs = {run["title"]: run["response"] for run in body["recalls"]}

    def contents(title: str) -> list[str]:
        return [r["memory"]["content"] for r in runs[title]["results"]]

    assert any("PostgreSQL" in c for c in contents("Hybrid search")[:1])
    assert all("project:alpha" in r["memory"]["tags"] for r in runs["Tag-scoped query"]["results"])
    window = runs["Time window"]
    assert window["count"] >= 3
    cutoff = datetime.now(timezone.utc) - timedelta(days=31)
    assert all(datetime.fromisoformat(r["memory"]["timestamp"]) > cutoff for r in window["results"])
    current = contents("Superseded memory")
    assert any("Redis Streams" in c for c in current)
    assert not any(c.startswith("Alpha's background jobs run on Celery") for c in current)
    assert any(c.startswith("Alpha's background jobs run on Celery") for c in contents("Same query, state_mode=history"))
    expansion = runs["Relation expansion"]
    assert expansion["expansion"]["expanded_count"] >= 1
    assert any(r["match_type"] == "relation" for r in expansion["results"])

    # the named database keeps the demo data; a second run refuses to mix into it
    again = cli("demo", db_path=path)
    assert again.code == 1 and "empty database" in again.err


def test_demo_says_when_the_score_floor_left_results_out() -> None:
    from localmem.demo import format_recall

    response = {"results": [], "score_filter": {"min_score": 0.0, "adaptive_floor": 0.61, "filtered_count": 2}}
    lines = format_recall(response, NOW, {}, 100)
    assert any("score floor: 2 weaker results" in line and "adaptive_floor=False" in line for line in lines)
    assert not any("score floor" in line for line in format_recall({"results": []}, NOW, {}, 100))


def test_demo_degraded_without_vectors(cli) -> None:
    result = cli("demo", embedder="none")
    assert result.code == 0, result.err
    assert "degraded" in result.out
    assert "Moved alpha's background jobs from Celery" in result.out


@pytest.mark.model
def test_demo_with_the_real_model(cli, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    result = cli("demo", "--json", db_path=tmp_path / "demo.db", embedder="auto")
    assert result.code == 0, result.err
    body = result.json()
    assert body["embedder"] == "all-MiniLM-L6-v2" and body["degraded"] is False
    runs = {run["title"]: run["response"] for run in body["recalls"]}
    assert "PostgreSQL" in runs["Hybrid search"]["results"][0]["memory"]["content"]
    current = [r["memory"]["content"] for r in runs["Superseded memory"]["results"]]
    assert any("Redis Streams" in c for c in current)
    assert not any(c.startswith("Alpha's background jobs run on Celery") for c in current)


def test_serve_refuses_a_public_bind_without_a_token(cli, monkeypatch) -> None:
    monkeypatch.delenv("LOCALMEM_API_TOKEN", raising=False)
    monkeypatch.delenv("AUTOMEM_API_TOKEN", raising=False)
    result = cli("serve", "--host", "0.0.0.0")
    assert result.code == 1
    assert "without an API token" in result.err


def test_mcp_command_answers_the_handshake(db: Path) -> None:
    pytest.importorskip("mcp")
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
    proc = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "mcp"],
                          input=request + "\n", capture_output=True, text=True, env=subprocess_env(),
                          timeout=60, check=False)
    reply = json.loads(proc.stdout.splitlines()[0])
    assert reply["id"] == 1 and reply["result"]["serverInfo"]["name"] == "localmem"
