"""The vector leg (3-bit code kNN + exact rescoring) against exact search."""

from __future__ import annotations

import math
import random

import pytest

from localmem.recall.channels import make_scope, vector_candidates
from localmem.recall.params import parse_recall_params
from localmem.storage.code_calibration import padded_dimensions
from localmem.storage.vector_index import code_input

DIMS = 64


def anisotropic_vectors(n: int, rng: random.Random) -> list[list[float]]:
    """Unit vectors with a shared offset and clusters, like sentence embeddings."""
    offset = [rng.gauss(0, 0.5) for _ in range(DIMS)]
    centres = [[rng.gauss(0, 1) for _ in range(DIMS)] for _ in range(20)]
    out = []
    for _ in range(n):
        centre = rng.choice(centres)
        v = [o + c + rng.gauss(0, 0.6) for o, c in zip(offset, centre)]
        norm = math.sqrt(sum(x * x for x in v))
        out.append([x / norm for x in v])
    return out


def test_vector_leg_recall_against_exact_search(memory_store_factory):
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(7)
    store = memory_store_factory(embedder="hash")  # 384 dims, like all-MiniLM-L6-v2
    # Anisotropic, clustered unit vectors, like sentence embeddings.
    offset = rng.normal(0, 0.5, 384)
    centres = rng.normal(0, 1, (30, 384))
    vectors = offset + centres[rng.integers(0, 30, 3000)] + rng.normal(0, 0.8, (3000, 384))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    ids = store.store_many([{"content": f"memory {i}", "embedding": v} for i, v in enumerate(vectors)])
    params = parse_recall_params({}, store.config, store.dimensions, store.now())
    scope = make_scope(params, store.config.excluded_types)
    hits, queries = 0, 50
    for i in rng.integers(0, 3000, queries):
        q = vectors[i] + rng.normal(0, 0.03, 384).astype(np.float32)
        q = (q / np.linalg.norm(q)).astype(np.float32)
        exact = np.argsort(-(vectors @ q))[:10]
        found = vector_candidates(store._backend, scope, q.tobytes(), 10)
        hits += len({ids[j] for j in exact} & {c["id"] for c in found})
        sims = [c["match_score"] for c in found]
        assert sims == sorted(sims, reverse=True)  # exact cosines, best first
    assert hits / (10 * queries) >= 0.98


def test_codes_of_odd_dimensions_are_padded(memory_store_factory):
    store = memory_store_factory(embedder="hash:10")
    a = store.store("alpha", embedding=[1.0] + [0.0] * 9)
    store.store("beta", embedding=[0.0, 1.0] + [0.0] * 8)
    assert padded_dimensions(10) == 16
    assert len(code_input(bytes(40))) == 64
    response = store.recall(embedding=[0.9, 0.1] + [0.0] * 8, limit=1)
    assert [r["id"] for r in response["results"]] == [a]


def test_narrow_and_broad_scopes_return_only_in_scope_hits(memory_store_factory):
    rng = random.Random(3)
    store = memory_store_factory(embedder="hash:64")
    vectors = anisotropic_vectors(600, rng)
    store.store_many([{"content": f"m {i}", "embedding": v,
                       "tags": ["rare"] if i % 50 == 0 else ["common"]} for i, v in enumerate(vectors)])
    for tag, expected in (("rare", 12), ("common", 10)):
        response = store.recall(embedding=vectors[5], tags=[tag], limit=10, adaptive_floor=False)
        assert len(response["results"]) == min(expected, 10)
        assert all(tag in r["memory"]["tags"] for r in response["results"])
