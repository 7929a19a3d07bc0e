"""Issue 33 items 2 and 3: a reembed never leaves two models in one file.

2. A write whose vectors were made before a reembed swapped the file's embedder,
   and that commits after the swap, is embedded again by the embedder the file
   records (it kept the old model's vector, or failed with a raw SQLError when the
   dimension changed).
3. One reembed owns a file at a time, across processes (two CLI runs at once
   mixed both models); a run that died is taken over.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from array import array
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from localmem import MemoryStore
from localmem.embedders import resolve_embedder
from localmem.embedders.hashing import HashEmbedder
from localmem.maintenance.reembed import reembed
from localmem.maintenance.importer import import_jsonl
from remote_servers import CLEARED, ROOT

TEXTS = [f"memory {i} about the garden, the orchard and the deploy pipeline" for i in range(40)]


class GatedHash:
    """The hash embedder, stopping inside its next ``embed`` once armed until ``go`` is set."""

    def __init__(self) -> None:
        self.inner = HashEmbedder(384)
        self.name, self.dimensions = self.inner.name, 384
        self.armed = False
        self.inside, self.go = threading.Event(), threading.Event()

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = self.inner.embed(texts)
        if self.armed:
            self.armed = False
            self.inside.set()
            self.go.wait(60)
        return vectors


def file_vectors(db: Path) -> tuple[dict[str, str], dict[str, bytes]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        vectors = dict(conn.execute("SELECT m.content, e.embedding FROM memories m "
                                    "JOIN memory_embeddings e ON e.pk = m.pk"))
    finally:
        conn.close()
    return meta, vectors


def as_bytes(vector: list[float]) -> bytes:
    return array("f", vector).tobytes()


def write_across_a_swap(db: Path, write: Any, target: Any) -> dict[str, Any]:
    """Run ``write(store)`` on a store whose embedding stops until ``target`` has been swapped in
    by a reembed on another connection; returns what the write returned or raised."""
    gate = GatedHash()
    writer = MemoryStore(db, embedder=gate)
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = write(writer)
        except Exception as exc:  # noqa: BLE001 -- reported by the test
            outcome["error"] = exc

    gate.armed = True
    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert gate.inside.wait(30), outcome
        with MemoryStore(db, embedder="none") as other:
            assert reembed(other, target)["status"] == "complete"
    finally:
        gate.go.set()
        thread.join(60)
        writer.close()
    return outcome


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store_many([{"content": text} for text in TEXTS[:10]])
    return path


@pytest.mark.parametrize("write", ["store", "store_many", "update", "supersede", "import"])
def test_a_write_embedded_before_a_swap_to_another_dimension_commits_in_the_new_model(db, write):
    new_model = HashEmbedder(256)
    text = f"written across the swap by {write}"
    with MemoryStore(db, embedder="hash") as store:
        first = store.recall(limit=1, sort="time_asc")["results"][0]["id"]
    calls = {
        "store": lambda s: s.store(text),
        "store_many": lambda s: s.store_many([{"content": text}, {"content": text + " too"}]),
        "update": lambda s: s.update(first, content=text),
        "supersede": lambda s: s.supersede(first, text),
        "import": lambda s: import_jsonl(s, [json.dumps({"content": text})]),
    }
    outcome = write_across_a_swap(db, calls[write], resolve_embedder("hash:256"))
    assert "error" not in outcome, repr(outcome.get("error"))
    meta, vectors = file_vectors(db)
    assert meta["embedder"] == "hash-256" and meta["dimensions"] == "256"
    assert {len(v) for v in vectors.values()} == {256 * 4}
    assert vectors[text] == as_bytes(new_model.embed([text])[0])


def test_a_callers_own_vector_of_the_old_dimension_is_refused_not_a_500(db):
    # The given vector passes the check made before the swap; the gate stops while the other item
    # is embedded; at commit the given vector no longer fits the file (base: a raw SQLError).
    from localmem import ValidationError

    vector = HashEmbedder(384).embed(["anything"])[0]
    outcome = write_across_a_swap(db, lambda s: s.store_many([
        {"content": "with a given vector", "embedding": vector}, {"content": "embedded here"}]),
        resolve_embedder("hash:256"))
    assert isinstance(outcome.get("error"), ValidationError), outcome
    assert "'embedding' has 384 dimensions" in str(outcome["error"]) and "hash-256" in str(outcome["error"])
    meta, vectors = file_vectors(db)
    assert "with a given vector" not in vectors and {len(v) for v in vectors.values()} == {1024}


class RotatedHash:
    """Another model of the same dimension (the hash vectors, reversed)."""

    name, dimensions = "rotated-hash-test", 384

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [v[::-1] for v in HashEmbedder(384).embed(texts)]


def test_a_write_embedded_before_a_swap_to_a_same_size_model_keeps_no_old_vector(db):
    # The file now records a model this process cannot load by name: the write stores no
    # vector (reported as embedder_error) rather than the old model's.
    text = "written across a same-dimension swap"
    outcome = write_across_a_swap(db, lambda s: s.store(text), RotatedHash())
    assert "error" not in outcome, repr(outcome.get("error"))
    meta, vectors = file_vectors(db)
    assert meta["embedder"] == "rotated-hash-test"
    assert text not in vectors  # base: the hash vector, in a file that records another model
    assert vectors[TEXTS[0]] == as_bytes(RotatedHash().embed([TEXTS[0]])[0])


# -- item 3: one reembed per file, across processes ------------------------------------------------

HOLDER = r"""
import sys, time
from pathlib import Path
from localmem import MemoryStore
from localmem.embedders.hashing import HashEmbedder
from localmem.maintenance.reembed import reembed
from localmem.maintenance.importer import import_jsonl

class Slow(HashEmbedder):
    def wait(self):
        Path(sys.argv[2]).touch()            # the run owns the file and is staging
        while not Path(sys.argv[3]).exists():
            time.sleep(0.02)

    def embed(self, texts):
        self.wait()
        return super().embed(texts)

    def embed_with_tokens(self, texts):
        self.wait()
        return super().embed_with_tokens(texts)

with MemoryStore(sys.argv[1], embedder="none") as store:
    print(reembed(store, Slow(128), batch_size=5)["status"], flush=True)
"""


def env() -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in CLEARED}, "PYTHONPATH": str(ROOT)}


def start_holder(db: Path, tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    inside, go = tmp_path / "inside", tmp_path / "go"
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(db), str(inside), str(go)], env=env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for _ in range(1500):
        if inside.exists() or process.poll() is not None:
            break
        threading.Event().wait(0.02)
    assert inside.exists(), process.communicate(timeout=10)
    return process, inside, go


def cli_reembed(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--json", "reembed", *args],
                          env=env(), capture_output=True, text=True, timeout=120)


def test_a_second_reembed_is_refused_while_another_process_runs_one(db, tmp_path):
    process, _, go = start_holder(db, tmp_path)
    try:
        second = cli_reembed(db, "--embedder", "hash:64")
        assert second.returncode == 1, (second.stdout, second.stderr)
        assert "another reembed is running on this file" in second.stderr and str(process.pid) in second.stderr
    finally:
        go.touch()
        out, err = process.communicate(timeout=120)
    assert process.returncode == 0 and out.strip() == "complete", err
    meta, vectors = file_vectors(db)
    assert meta["embedder"] == "hash-128" and {len(v) for v in vectors.values()} == {128 * 4}
    assert "reembed_owner" not in meta  # released


def test_a_reembed_killed_while_owning_the_file_is_taken_over(db, tmp_path):
    process, _, _ = start_holder(db, tmp_path)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=30)
    assert "reembed_owner" in file_vectors(db)[0]
    done = cli_reembed(db, "--embedder", "hash:64")
    assert done.returncode == 0 and json.loads(done.stdout)["status"] == "complete", done.stderr
    meta, vectors = file_vectors(db)
    assert meta["embedder"] == "hash-64" and {len(v) for v in vectors.values()} == {64 * 4}
    assert "reembed_owner" not in meta


@pytest.mark.model
def test_a_write_embedded_with_hash_before_a_swap_to_minilm_commits_minilm_vectors(db):
    # The case: hash -> MiniLM, the same 384 dimensions; the write kept its hash vector.
    minilm = resolve_embedder("all-MiniLM-L6-v2")
    text = "written across the swap to MiniLM"
    outcome = write_across_a_swap(db, lambda s: s.store(text), minilm)
    assert "error" not in outcome, repr(outcome.get("error"))
    meta, vectors = file_vectors(db)
    assert meta["embedder"] == "all-MiniLM-L6-v2"
    expected = np.frombuffer(as_bytes(minilm.embed([text])[0]), np.float32)
    stored = np.frombuffer(vectors[text], np.float32)
    assert float(stored @ expected) > 0.999  # MiniLM's vector, not the hash one
    assert float(stored @ np.frombuffer(as_bytes(HashEmbedder(384).embed([text])[0]), np.float32)) < 0.9
