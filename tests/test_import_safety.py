"""Import safety (issue 12, item 8): an import validates lines exactly as the
API does, is all-or-nothing by default, and changes no existing memory or
edge unless asked (``--update``).

The CLI runs as a subprocess (the real entry point, exit codes, stderr); the
Python entry point is ``import_jsonl``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore, NotFoundError, ValidationError
from localmem.embedders import resolve_embedder
from localmem.maintenance.export import export_jsonl
from localmem.maintenance.importer import import_jsonl

REPO = Path(__file__).resolve().parents[1]
A = "3f2504e0-4f89-41d3-9a0c-0305e82c3301"
B = "3f2504e0-4f89-41d3-9a0c-0305e82c3302"
C = "3f2504e0-4f89-41d3-9a0c-0305e82c3303"
D = "3f2504e0-4f89-41d3-9a0c-0305e82c3304"
MISSING = "00000000-0000-4000-8000-000000000000"


def localmem(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONIOENCODING"] = "utf-8"
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, encoding="utf-8", env=env, timeout=120, check=False)


def jsonl(path: Path, *items: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def memory(memory_id: str | None, content: str, **fields: Any) -> dict[str, Any]:
    line = {"kind": "memory", "content": content, **fields}
    if memory_id is not None:
        line["id"] = memory_id
    return line


def edge(first: str, second: str, relation: str = "PREFERS_OVER", **fields: Any) -> dict[str, Any]:
    return {"kind": "edge", "memory1_id": first, "memory2_id": second, "relation_type": relation, **fields}


def seed(db: Path) -> None:
    """Memories A and B with the edge A -[PREFERS_OVER 0.9 {reason: speed}]-> B."""
    with MemoryStore(db, embedder="hash") as store:
        store.store("alpha is the chosen queue", id=A, importance=0.7)
        store.store("beta is the other queue", id=B)
        store.associate(A, B, "PREFERS_OVER", 0.9, reason="speed")


def exported(db: Path) -> list[dict[str, Any]]:
    """The database's export lines (read in-process: cheaper than one more subprocess)."""
    out = io.StringIO()
    with MemoryStore(db, embedder="hash") as store:
        export_jsonl(store, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def edges(db: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(e["memory1_id"], e["relation_type"], e["memory2_id"]): e for e in exported(db) if e["kind"] == "edge"}


def memory_ids(db: Path) -> set[str]:
    return {line["id"] for line in exported(db) if line["kind"] == "memory"}


def failed(result: subprocess.CompletedProcess[str], line: int, needle: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert f"line {line}:" in result.stderr, result.stderr
    assert needle in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


# -- existing data stays as it is -------------------------------------------


def test_skip_existing_leaves_an_existing_edge_as_it_is(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seed(db)
    path = jsonl(tmp_path / "in.jsonl", edge(A, B, strength=0.01, properties={"reason": "other"}),
                 memory(A, "alpha rewritten"))
    result = localmem(db, "import", str(path), "--skip-existing", "--json")
    assert result.returncode == 0, result.stderr
    kept = edges(db)[(A, "PREFERS_OVER", B)]
    assert kept["strength"] == 0.9 and kept["properties"] == {"reason": "speed"}
    summary = json.loads(result.stdout)
    assert summary["by_kind"]["edge"] == {"created": 0, "updated": 0, "unchanged": 0, "skipped": 1}
    assert summary["by_kind"]["memory"] == {"created": 0, "updated": 0, "unchanged": 0, "skipped": 1}
    with MemoryStore(db, embedder="hash") as store:
        assert store.get(A)["content"] == "alpha is the chosen queue"
    human = localmem(db, "import", str(path), "--skip-existing")
    assert human.returncode == 0, human.stderr
    assert "1 skipped" in human.stdout and "edges" in human.stdout


def test_an_existing_id_or_edge_without_a_flag_fails_before_anything_is_written(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seed(db)
    path = jsonl(tmp_path / "in.jsonl", memory(C, "a new memory"), edge(A, B, strength=0.01))
    failed(localmem(db, "import", str(path)), 2, "already exists")
    assert edges(db)[(A, "PREFERS_OVER", B)]["strength"] == 0.9
    assert memory_ids(db) == {A, B}  # the new memory on line 1 was not written either

    path = jsonl(tmp_path / "in.jsonl", memory(C, "a new memory"), memory(A, "alpha rewritten"))
    failed(localmem(db, "import", str(path)), 2, "already exists")
    assert memory_ids(db) == {A, B}


def test_update_changes_existing_memory_and_edge_and_reports_it(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seed(db)
    path = jsonl(tmp_path / "in.jsonl", memory(A, "alpha moved to Redis Streams", importance=0.2),
                 edge(A, B, strength=0.01, properties={"reason": "cost"}), memory(C, "gamma is new"),
                 edge(C, A, "RELATES_TO"))
    result = localmem(db, "import", str(path), "--update", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["by_kind"]["memory"] == {"created": 1, "updated": 1, "unchanged": 0, "skipped": 0}
    assert summary["by_kind"]["edge"] == {"created": 1, "updated": 1, "unchanged": 0, "skipped": 0}
    changed = edges(db)[(A, "PREFERS_OVER", B)]
    assert changed["strength"] == 0.01 and changed["properties"] == {"reason": "cost"}
    with MemoryStore(db, embedder="hash") as store:
        updated = store.get(A)
        assert updated["content"] == "alpha moved to Redis Streams" and updated["importance"] == 0.2
        assert store.recall("Redis Streams", limit=1)["results"][0]["id"] == A  # re-indexed
        assert store.health()["indexes_agree"] is True

    again = localmem(db, "import", str(path), "--update", "--json")  # the same file again: no change
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["by_kind"]["memory"] == {"created": 0, "updated": 0, "unchanged": 2, "skipped": 0}
    assert summary["by_kind"]["edge"] == {"created": 0, "updated": 0, "unchanged": 2, "skipped": 0}


def test_export_then_import_update_into_the_same_database_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seed(db)
    first = localmem(db, "export").stdout
    path = tmp_path / "dump.jsonl"
    path.write_text(first, encoding="utf-8")
    result = localmem(db, "import", str(path), "--update", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["by_kind"]["memory"]["unchanged"] == 2
    assert localmem(db, "export").stdout == first
    assert "--update" in localmem(db, "import", str(path), "--update", "--skip-existing").stderr


# -- edge lines are validated exactly as associate() --------------------------


def test_edge_lines_are_validated_like_associate_and_nothing_is_written(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store("alpha", id=A)
        store.store("beta", id=B)
    cases = {
        "itself": edge(A, A, "RELATES_TO"),
        "relation_type": edge(A, B, "NOT_A_RELATION"),
        "strength": edge(A, B, strength=1.5),
        "colour": edge(A, B, properties={"colour": "red"}),
        "not found": edge(A, MISSING, "RELATES_TO"),
        "duplicate edge": edge(B, A, "relates_to"),  # the same edge as line 2
    }
    for needle, bad in cases.items():
        lines = [memory(C, "gamma, written only if the whole file is good"), edge(B, A, "RELATES_TO"), bad]
        result = localmem(db, "import", str(jsonl(tmp_path / "in.jsonl", *lines)))
        failed(result, 3, needle)
        assert memory_ids(db) == {A, B}, needle
        assert edges(db) == {}, needle

    # What export writes stays importable: the system types the recall reads, with
    # their own properties and updated_at; type names are case-insensitive.
    path = jsonl(tmp_path / "in.jsonl", edge(A, B, "PRECEDED_BY", strength=0.1, properties={"count": 3},
                                             updated_at="2023-05-05T05:05:05.500000+00:00"),
                 edge(B, A, "similar_to", properties={"score": 0.93}))
    result = localmem(db, "import", str(path))
    assert result.returncode == 0, result.stderr
    stored = edges(db)
    assert stored[(A, "PRECEDED_BY", B)]["properties"] == {"count": 3}
    assert stored[(A, "PRECEDED_BY", B)]["updated_at"] == "2023-05-05T05:05:05.500000+00:00"
    assert (B, "SIMILAR_TO", A) in stored


# -- all or nothing, and re-running ------------------------------------------


def test_a_bad_edge_after_good_memories_writes_nothing_and_the_rerun_succeeds(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    lines = [memory(C, "gamma"), memory(D, "delta"), edge(C, MISSING, "RELATES_TO")]
    path = jsonl(tmp_path / "in.jsonl", *lines)
    result = localmem(db, "import", str(path))
    failed(result, 3, "not found")
    assert memory_ids(db) == set()
    assert "nothing was imported" in result.stderr

    jsonl(path, *lines[:2], edge(C, D, "RELATES_TO"))  # fixed: the same import again
    fixed = localmem(db, "import", str(path), "--json")
    assert fixed.returncode == 0, fixed.stderr
    summary = json.loads(fixed.stdout)
    assert summary["memories"] == 2 and summary["edges"] == 1
    assert summary["by_kind"]["memory"]["created"] == 2 and summary["by_kind"]["edge"]["created"] == 1


def test_a_bad_line_in_a_later_chunk_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    lines = [memory(None, f"memory {i}") for i in range(5)] + [memory(None, "bad", importance="high")]
    result = localmem(db, "import", str(jsonl(tmp_path / "in.jsonl", *lines)), "--batch-size", "2")
    failed(result, 6, "importance")
    assert memory_ids(db) == set()


def test_chunked_mode_keeps_earlier_chunks_and_resumes_with_skip_existing(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = [f"3f2504e0-4f89-41d3-9a0c-0305e82c34{i:02d}" for i in range(6)]
    lines = [memory(i, f"memory {n}") for n, i in enumerate(ids[:5])] + [memory(ids[5], "bad", importance=7)]
    path = jsonl(tmp_path / "in.jsonl", *lines)
    result = localmem(db, "import", str(path), "--chunked", "--batch-size", "2")
    failed(result, 6, "importance")
    assert "4 memories from earlier chunks" in result.stderr
    assert memory_ids(db) == set(ids[:4])

    jsonl(path, *lines[:5], memory(ids[5], "good now"))
    resumed = localmem(db, "import", str(path), "--chunked", "--batch-size", "2", "--skip-existing", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["by_kind"]["memory"] == {"created": 2, "updated": 0, "unchanged": 0,
                                                              "skipped": 4}
    assert memory_ids(db) == set(ids)


# -- the Python entry point ----------------------------------------------------


def test_import_jsonl_is_all_or_nothing_and_updates_only_when_asked(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seed(db)
    lines = [json.dumps(memory(C, "gamma")), json.dumps(edge(A, B, strength=0.2))]
    with MemoryStore(db, embedder="hash") as store:
        with pytest.raises(ValidationError, match="line 2: .*already exists") as caught:
            import_jsonl(store, lines)
        assert caught.value.line == 2
        with pytest.raises(NotFoundError):
            store.get(C)
        result = import_jsonl(store, lines, skip_existing=True)
        assert result.as_dict()["by_kind"]["edge"]["skipped"] == 1
        assert result.as_dict()["by_kind"]["memory"]["created"] == 1
        result = import_jsonl(store, lines, update=True)
        assert result.as_dict()["by_kind"]["edge"]["updated"] == 1
        assert result.as_dict()["by_kind"]["memory"]["unchanged"] == 1
        with pytest.raises(ValidationError, match="update"):
            import_jsonl(store, lines, update=True, skip_existing=True)


class _RacingEmbedder:
    """The hash embedder; while it embeds "delta" (after the importer checked that
    D is free), another writer stores memory D."""

    def __init__(self, path: Path) -> None:
        self._inner = resolve_embedder("hash")
        self.name, self.dimensions, self.path, self.raced = self._inner.name, self._inner.dimensions, path, False

    def embed(self, texts: list[str]) -> list[Any]:
        if "delta" in texts and not self.raced:
            self.raced = True
            with MemoryStore(self.path, embedder="hash") as other:
                other.store("stored by another process meanwhile", id=D)
        return self._inner.embed(texts)


def test_a_conflict_that_appears_while_importing_rolls_everything_back(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    MemoryStore(db, embedder="hash").close()
    lines = [json.dumps(memory(C, "gamma")), json.dumps(memory(D, "delta"))]
    with MemoryStore(db, embedder=_RacingEmbedder(db)) as store:
        with pytest.raises(ValidationError, match="line 2: .*already exists"):
            import_jsonl(store, lines, chunk_size=1)
        with pytest.raises(NotFoundError):
            store.get(C)
        assert store.get(D)["content"] == "stored by another process meanwhile"


@pytest.mark.parametrize("mode", [(), ("--skip-existing",), ("--update",)])
def test_an_import_does_not_bring_back_a_memory_forget_purged(tmp_path: Path, mode: tuple[str, ...]) -> None:
    """An export made before `localmem forget` still holds the text (forget says so); importing it
    again refused nothing and stored the forgotten memory anew (and sync then carried it to peers)."""
    db = tmp_path / "m.db"
    seed(db)
    lines = exported(db)
    old = jsonl(tmp_path / "old.jsonl", *lines)
    assert localmem(db, "forget", A).returncode == 0
    result = localmem(db, "import", str(old), *mode)
    line = 1 + next(i for i, item in enumerate(lines) if item.get("id") == A)
    failed(result, line, f"memory {A} was forgotten ('localmem forget', ")
    assert memory_ids(db) == {B}
    with MemoryStore(db, embedder="hash") as store, pytest.raises(ValidationError, match="was forgotten"):
        import_jsonl(store, [json.dumps(memory(A, "alpha is the chosen queue"))])


def test_the_advice_on_a_forgotten_memorys_line_is_enough_to_import_the_rest(tmp_path: Path) -> None:
    """The refusal said "remove its line to import the rest"; a file with a header then failed on
    its counts (and on the forgotten memory's edges). Doing what the message says now imports."""
    db = tmp_path / "m.db"
    seed(db)
    lines = exported(db)
    old = jsonl(tmp_path / "old.jsonl", *lines)
    assert localmem(db, "forget", A).returncode == 0
    refused = localmem(db, "import", str(old), "--skip-existing")
    assert refused.returncode == 2 and "its edges' lines" in refused.stderr and "header's counts" in refused.stderr
    kept = [item for item in lines if A not in (item.get("id"), item.get("memory1_id"), item.get("memory2_id"))]
    kept[0] = {**kept[0], "memories": kept[0]["memories"] - 1, "edges": kept[0]["edges"] - 1}
    done = localmem(db, "import", str(jsonl(tmp_path / "edited.jsonl", *kept)), "--skip-existing")
    assert done.returncode == 0, done.stderr
    assert memory_ids(db) == {B}
