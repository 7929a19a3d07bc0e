"""The in-memory code scan: recall against exact search, calibration, and keeping up with the file."""

from __future__ import annotations

import numpy as np
import pytest

from localmem import MemoryStore
from localmem.storage import code_calibration as calibration
from localmem.storage.code_search import CodeIndex
from localmem.storage.database import transaction

from store_helpers import codes_of

DIMS = 64


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)


def minilm_like(n: int, rng: np.random.Generator, dims: int = DIMS) -> np.ndarray:
    """Mixtures of two of 300 topic directions plus noise: spread around the origin, as MiniLM's are."""
    topics = unit(rng.standard_normal((300, dims)))
    a, b = topics[rng.integers(0, 300, n)], topics[rng.integers(0, 300, n)]
    return unit(0.8 * a + 0.45 * b + 0.03 * rng.standard_normal((n, dims)))


def anisotropic(n: int, rng: np.random.Generator, dims: int = DIMS) -> np.ndarray:
    """The same, sharing one strong common direction and unequal spreads (bge/e5-style)."""
    common = unit(rng.standard_normal(dims))
    spread = np.linspace(0.4, 1.6, dims).astype(np.float32)
    return unit(unit(minilm_like(n, rng, dims) * spread) + 1.2 * common)


def found_pks(store: MemoryStore, ids: set[str]) -> set[int]:
    return {pk for memory_id, pk in store.conn.execute("SELECT id, pk FROM memories") if memory_id in ids}


def filled(kind, n: int, seed: int = 5) -> tuple[MemoryStore, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    vectors = kind(n + 40, rng)
    stored, queries = vectors[:n], unit(vectors[n:] + 0.3 / np.sqrt(DIMS) * rng.standard_normal((40, DIMS)))
    store = MemoryStore(":memory:", embedder=f"hash:{DIMS}")
    ids = store.store_many([{"content": f"memory {i}", "embedding": v} for i, v in enumerate(stored)])
    pk = dict(store.conn.execute("SELECT id, pk FROM memories"))
    return store, stored, np.array([pk[i] for i in ids]), queries


@pytest.mark.parametrize("kind", [minilm_like, anisotropic], ids=["minilm-like", "anisotropic"])
def test_two_stage_scan_finds_the_exact_top_10(kind):
    store, vectors, pks, queries = filled(kind, 5000)
    store.backend.code_index = CodeIndex(one_stage_rows=0)  # both stages, even on a small store
    hits = 0
    for q in queries:
        truth = set(pks[np.argsort(-(vectors @ q))[:10]].tolist())
        response = store.recall(embedding=q.tolist(), limit=10, adaptive_floor=False)
        hits += len(truth & found_pks(store, {r["id"] for r in response["results"]}))
    assert hits / (10 * len(queries)) >= 0.95
    assert store.backend.code_index.describe()["codes"] == 5000


def test_measured_thresholds_need_a_shallower_scan_for_anisotropic_vectors():
    sample = anisotropic(4000, np.random.default_rng(5))
    fixed = calibration.measure_depths(sample, calibration.default_thresholds(DIMS), np.random.default_rng(1))
    measured = calibration.measure_depths(sample, calibration.measured_thresholds(sample),
                                          np.random.default_rng(1))
    assert measured.one_bit * 3 < fixed.one_bit
    assert measured.three_bit < fixed.three_bit
    assert measured.sample_recall >= 0.95


def test_a_growing_store_is_calibrated_from_its_vectors_and_every_code_follows():
    store, vectors, _pks, _q = filled(anisotropic, 600)
    generation, mid, checked = store.conn.execute(
        "SELECT generation, mid, checked_rows FROM vector_calibration").fetchone()
    assert generation > 1 and checked == 600
    mean = vectors.mean(axis=0)
    assert np.allclose(np.frombuffer(mid, np.float32), mean, atol=1e-5)  # the store's own centre, not 0
    for pk, embedding, code in store.conn.execute(
            "SELECT e.pk, e.embedding, v.codes FROM memory_embeddings AS e JOIN vector_codes AS v USING (pk)"):
        assert code == codes_of(store, embedding), pk


def test_a_reader_sees_another_connections_writes_deletes_and_new_times(tmp_path):
    path = tmp_path / "m.db"
    rng = np.random.default_rng(9)
    vectors = minilm_like(300, rng)
    with MemoryStore(path, embedder=f"hash:{DIMS}") as writer, MemoryStore(path, embedder=f"hash:{DIMS}") as reader:
        ids = writer.store_many([{"content": f"m {i}", "embedding": v, "timestamp": "2024-01-01T00:00:00Z"}
                                 for i, v in enumerate(vectors)])
        target = vectors[7]
        assert reader.recall(embedding=target.tolist(), limit=1)["results"][0]["id"] == ids[7]
        fresh = unit(target + 0.01 * rng.standard_normal(DIMS))
        new_id = writer.store("newcomer", embedding=fresh.tolist(), timestamp="2024-06-01T00:00:00Z")
        writer.delete(ids[7])
        writer.update(ids[8], timestamp="2024-06-02T00:00:00Z")
        got = [r["id"] for r in reader.recall(embedding=target.tolist(), limit=3)["results"]]
        assert got[0] == new_id and ids[7] not in got
        window = reader.recall(embedding=vectors[8].tolist(), limit=5,
                               start="2024-05-01T00:00:00Z", end="2024-07-01T00:00:00Z")["results"]
        assert {r["id"] for r in window} == {new_id, ids[8]}


def test_uncommitted_vectors_are_searched_exactly_and_a_rollback_leaves_no_trace():
    rng = np.random.default_rng(3)
    vectors = minilm_like(200, rng)
    store = MemoryStore(":memory:", embedder=f"hash:{DIMS}")
    store.store_many([{"content": f"m {i}", "embedding": v} for i, v in enumerate(vectors)])
    probe = unit(rng.standard_normal(DIMS))
    store.recall(embedding=probe.tolist(), limit=1)  # the cache is loaded
    with pytest.raises(RuntimeError):
        with transaction(store.conn):
            inside = store.store("uncommitted", embedding=probe.tolist())
            assert store.recall(embedding=probe.tolist(), limit=1)["results"][0]["id"] == inside
            raise RuntimeError("roll back")
    after = store.recall(embedding=probe.tolist(), limit=1)["results"]
    assert after and after[0]["id"] != inside
    assert store.backend.code_index.describe()["codes"] == 200


def test_deleting_most_codes_compacts_the_arrays():
    store, vectors, pks, _q = filled(minilm_like, 400)
    store.recall(embedding=vectors[0].tolist(), limit=1)
    ids = [memory_id for memory_id, in store.conn.execute("SELECT id FROM memories ORDER BY pk")]
    for memory_id in ids[:300]:
        store.delete(memory_id)
    response = store.recall(embedding=vectors[350].tolist(), limit=1)
    assert response["results"][0]["id"] == ids[350]
    described = store.backend.code_index.describe()
    assert described["codes"] == 100 and described["slots"] == 100


def test_a_scan_of_every_slot_picks_what_a_scan_of_the_listed_slots_picks():
    # A plain recall scans every slot without listing them; listing every pk, or
    # a window holding every memory, must pick the same candidates, before and after a deletion.
    store, _vectors, pks, queries = filled(minilm_like, 3000)
    index = store.backend.code_index = CodeIndex(one_stage_rows=0)
    conn, sql = store.conn, store.backend.sql
    for deleted in (None, int(pks[7])):
        if deleted is not None:
            store.delete(conn.execute("SELECT id FROM memories WHERE pk = ?", (deleted,)).fetchone()[0])
        listed = pks[pks != deleted]
        for q in queries[:10]:
            blob = q.astype(np.float32).tobytes()
            every = index.candidates(conn, sql, blob, 10)
            assert every == index.candidates(conn, sql, blob, 10, among=listed)
            assert every == index.candidates(conn, sql, blob, 10, window=(-np.inf, np.inf))
            assert deleted not in every and len(every) >= 80
