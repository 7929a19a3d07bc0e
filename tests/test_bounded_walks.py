"""Issue 33 items 1 and 8: every walk over edges is bounded in work by construction.

The work of a walk is counted in SQLite virtual-machine steps (a progress
handler), not timed: path-enumerating walks grow with the number of paths
(exponential on a layered graph, ~n^depth on a dense one), a walk that visits
each memory once grows with the edges.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

from localmem.storage import walk as walk_module
from localmem.ui.data import neighbourhood

STEP = 100


def vm_steps(store: Any, call: Callable[[], Any]) -> tuple[int, Any]:
    """SQLite VM steps (to the nearest STEP) the call took, and its answer."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    store.conn.set_progress_handler(tick, STEP)
    try:
        answer = call()
    finally:
        store.conn.set_progress_handler(None)
    return count[0] * STEP, answer


def layered(store: Any, layers: int, width: int = 3) -> list[list[str]]:
    """``layers`` layers of ``width`` memories, each superseded by every memory of the next layer."""
    ids = [store.store_many([{"content": f"layer {i} memory {j}"} for j in range(width)]) for i in range(layers)]
    for older, newer in zip(ids, ids[1:]):
        for a in older:
            for b in newer:
                store.associate(a, b, type="INVALIDATED_BY")
    return ids


def dense(store: Any, size: int) -> list[str]:
    ids = store.store_many([{"content": f"densely linked memory {i}"} for i in range(size)])
    for i in range(size):
        for j in range(i + 1, size):
            store.associate(ids[i], ids[j], type="RELATES_TO")
    return ids


@pytest.fixture
def store(memory_store_factory):
    return memory_store_factory(embedder="none")


def test_cycle_check_on_layered_supersessions_reads_each_edge_once(store):
    layers = layered(store, 10)  # 3^10 paths from the first layer; 81 edges
    edges = 9 * 9
    newcomer = store.store("a memory about to supersede the first layer's")
    steps, answer = vm_steps(store, lambda: store.associate(newcomer, layers[0][0], type="INVALIDATED_BY"))
    assert "warnings" not in answer
    # Path enumeration took 1.6 million steps here; a walk that expands each memory once, a few thousand.
    assert steps < 40 * edges, steps


def test_cycle_check_still_finds_a_cycle_through_the_layers(store):
    layers = layered(store, 6)
    steps, answer = vm_steps(store, lambda: store.associate(layers[-1][1], layers[0][2], type="EVOLVED_INTO"))
    (warning,) = answer["warnings"]
    assert "closes a supersession cycle" in warning
    path = warning.split("(", 1)[1].split(")", 1)[0].split(" -> ")
    assert len(path) == 7 and path[0] == layers[-1][1] and path[1] == layers[0][2] and path[-1] == layers[-1][1]
    assert all(memory in layer for memory, layer in zip(path[1:-1], layers))
    # supersede() runs the same check
    replaced = store.supersede(layers[-1][0], layers[0][0])
    assert "closes a supersession cycle" in replaced["warnings"][0]


def test_related_at_depth_three_on_a_dense_graph_reads_each_edge_once(store):
    ids = dense(store, 24)  # 276 edges; ~24^3 paths of three hops from each memory
    steps, answer = vm_steps(store, lambda: store.related(ids[0], max_depth=3, limit=200))
    assert {m["id"] for m in answer["related_memories"]} == set(ids[1:])
    assert all(m["depth"] == 1 for m in answer["related_memories"])
    assert "truncated" not in answer
    assert steps < 40 * 276, steps


def test_related_keeps_the_nearest_depth_and_the_importance_order(store):
    a, b, c, d = (store.store(f"chain memory {n}", importance=imp) for n, imp in
                  (("a", 0.5), ("b", 0.2), ("c", 0.9), ("d", 0.7)))
    store.associate(a, b, type="RELATES_TO")
    store.associate(c, b, type="RELATES_TO")  # reached against the edge's direction
    store.associate(c, d, type="RELATES_TO")
    store.associate(a, d, type="LEADS_TO")  # not a type asked for: d is three hops away
    answer = store.related(a, max_depth=3, relationship_types=["RELATES_TO"], limit=10)
    assert [(m["id"], m["depth"]) for m in answer["related_memories"]] == [(c, 2), (d, 3), (b, 1)]


def test_a_walk_cut_by_its_budget_says_so(store, monkeypatch):
    ids = dense(store, 12)
    monkeypatch.setattr(walk_module, "WALK_EDGE_BUDGET", 5)
    answer = store.related(ids[0], max_depth=2, limit=200)
    assert answer["truncated"] is True and "5 edges" in answer["warnings"][0]
    assert 1 <= answer["count"] <= 5
    graph = neighbourhood(store, ids[0], depth=3)
    assert graph["truncated"] is True and graph["warnings"]
    layers = layered(store, 4)
    newcomer = store.store("one more")
    answer = store.associate(newcomer, layers[0][0], type="INVALIDATED_BY")
    assert "did not finish" in answer["warnings"][0]


def test_a_walk_past_its_deadline_says_so(store, monkeypatch):
    ids = dense(store, 5)
    monkeypatch.setattr(walk_module, "WALK_SECONDS", -1.0)
    answer = store.related(ids[0], max_depth=3)
    assert answer["truncated"] is True and "deadline" in answer["warnings"][0]
