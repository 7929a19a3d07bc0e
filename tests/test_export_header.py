"""The export's header line: vectors from another embedder are refused, cut files noticed.

Through the CLI, as a user moves a store between machines and embedders.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from localmem import MemoryStore

ROOT = Path(__file__).resolve().parent.parent


def localmem(db: Path, *args: str, embedder: str = "hash") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("LOCALMEM_EMBEDDER", None)
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", embedder, *args],
                          capture_output=True, text=True, env=env, timeout=120)


def seeded(tmp_path: Path, embedder: str = "hash") -> Path:
    db = tmp_path / "source.db"
    with MemoryStore(db, embedder=embedder) as store:
        first = store.store("We picked PostgreSQL for the billing service.", tags=["project:billing"])
        second = store.store("The billing service runs on two replicas.")
        store.associate(first, second, "RELATES_TO", 0.7)
    return db


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_export_opens_with_a_header(tmp_path: Path):
    dump = tmp_path / "dump.jsonl"
    assert localmem(seeded(tmp_path), "export", str(dump)).returncode == 0
    header = lines(dump)[0]
    assert header["kind"] == "header" and header["format"] == "localmem-export" and header["version"] == 2
    assert (header["embedder"], header["dimensions"]) == ("hash", 384)
    assert (header["memories"], header["edges"]) == (2, 1)
    again = tmp_path / "again.jsonl"
    assert localmem(seeded(tmp_path / "twice"), "export", str(again)).returncode == 0
    assert lines(again)[0] == header  # no time stamp: the same store exports the same bytes


def test_vectors_of_another_embedder_are_refused_and_nothing_is_written(tmp_path: Path):
    dump = tmp_path / "dump.jsonl"
    assert localmem(seeded(tmp_path), "export", str(dump)).returncode == 0
    # the same dimension, another vector space: main stored these silently
    target = tmp_path / "other.db"
    with MemoryStore(target, embedder="hash:384") as store:
        store.store("already here")
    header = lines(dump)[0]
    header["embedder"] = "all-MiniLM-L6-v2"
    body = dump.read_text(encoding="utf-8").splitlines()[1:]
    minilm = tmp_path / "minilm.jsonl"
    minilm.write_text("\n".join([json.dumps(header)] + body) + "\n", encoding="utf-8")
    refused = localmem(target, "import", str(minilm))
    assert refused.returncode == 2
    assert "line 1:" in refused.stderr and "made by 'all-MiniLM-L6-v2' (384 dimensions)" in refused.stderr
    assert "'hash' (384 dimensions)" in refused.stderr and "--reembed" in refused.stderr
    with MemoryStore(target, embedder="hash") as store:
        assert store.health()["memory_count"] == 1
    reembedded = localmem(target, "import", str(minilm), "--reembed")
    assert reembedded.returncode == 0, reembedded.stderr
    with MemoryStore(target, embedder="hash") as store:
        health = store.health()
        assert health["memory_count"] == 3 and health["memories_without_embedding"] == 0
        hits = store.recall("which database for billing", limit=1)["results"]
        assert hits[0]["memory"]["content"].startswith("We picked PostgreSQL")


def test_a_file_cut_short_is_refused(tmp_path: Path):
    dump = tmp_path / "dump.jsonl"
    assert localmem(seeded(tmp_path), "export", str(dump)).returncode == 0
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(dump.read_text(encoding="utf-8").splitlines()[:2]) + "\n", encoding="utf-8")
    result = localmem(tmp_path / "new.db", "import", str(cut))
    assert result.returncode == 2
    assert "announces 2 memories and 1 edges, the file holds 1 and 0" in result.stderr
    with MemoryStore(tmp_path / "new.db", embedder="hash") as store:
        assert store.health()["memory_count"] == 0


def test_a_header_elsewhere_or_from_the_future_is_refused(tmp_path: Path):
    dump = tmp_path / "dump.jsonl"
    assert localmem(seeded(tmp_path), "export", str(dump)).returncode == 0
    raw = dump.read_text(encoding="utf-8").splitlines()
    moved = tmp_path / "moved.jsonl"
    moved.write_text("\n".join(raw[1:2] + raw[:1] + raw[2:]) + "\n", encoding="utf-8")
    result = localmem(tmp_path / "a.db", "import", str(moved))
    assert result.returncode == 2 and "line 2: a header may only be the first line" in result.stderr
    future = dict(json.loads(raw[0]), version=99)
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join([json.dumps(future)] + raw[1:]) + "\n", encoding="utf-8")
    result = localmem(tmp_path / "b.db", "import", str(newer))
    assert result.returncode == 2 and "export version 99, newer than this localmem reads" in result.stderr


def test_exports_without_a_header_still_import(tmp_path: Path):
    dump = tmp_path / "dump.jsonl"
    assert localmem(seeded(tmp_path), "export", str(dump)).returncode == 0
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join(dump.read_text(encoding="utf-8").splitlines()[1:]) + "\n", encoding="utf-8")
    result = localmem(tmp_path / "new.db", "import", str(old), "--json")
    assert result.returncode == 0, result.stderr
    assert (json.loads(result.stdout)["memories"], json.loads(result.stdout)["edges"]) == (2, 1)


def test_a_refused_import_into_a_new_file_leaves_no_database_behind(tmp_path: Path):
    """The refusal advises a database opened with the file's embedder: a new file made for the
    refused import (recording the wrong embedder) would stand in the way of exactly that, and
    importing into it later with --embedder mixes two vector spaces with only a warning."""
    dump = tmp_path / "dump.jsonl"
    assert localmem(seeded(tmp_path), "export", str(dump)).returncode == 0
    target = tmp_path / "new" / "fresh.db"
    refused = localmem(target, "import", str(dump), embedder="hash:128")
    assert refused.returncode == 2 and "nothing was imported" in refused.stderr
    assert "not kept" in refused.stderr, refused.stderr
    assert not any(target.parent.glob("fresh.db*")), list(target.parent.iterdir())
    accepted = localmem(target, "import", str(dump))
    assert accepted.returncode == 0, accepted.stderr
    with MemoryStore(target) as store:
        assert store.health()["embedder"]["recorded"] == "hash" and store.health()["memory_count"] == 2
