"""Current-state filtering and supersession chains in recall."""

from __future__ import annotations

import pytest

from localmem import ValidationError


@pytest.fixture
def store(memory_store_factory):
    # Keyword channel only: a memory is a candidate only when its words match.
    return memory_store_factory(embedder="none")


def ids(response):
    return [r["id"] for r in response["results"]]


def chain(store, contents, **fields):
    """Store memories linked first -> second -> ... by INVALIDATED_BY edges (no t_invalid)."""
    made = [store.store(c, **fields) for c in contents]
    for old, new in zip(made, made[1:]):
        store.associate(old, new, type="INVALIDATED_BY", strength=0.9)
    return made


def test_superseded_memory_is_replaced_in_place(store):
    old = store.store("We use MongoDB for the main database.")
    result = store.supersede(old, "Switched primary storage to Postgres.", reason="scaling")
    new = result["memory_id"]
    response = store.recall("mongodb", state_debug=True)
    [hit] = response["results"]
    assert hit["id"] == new and hit["match_type"] == "state_replacement"
    assert hit["state_replaces"] == old
    assert hit["relations"][0] == {"type": "INVALIDATED_BY", "strength": 0.9, "from": old}
    assert response["state_filter"]["suppressed_count"] == 1
    assert response["state_filter"]["replacement_count"] == 1
    assert response["state_filter"]["suppressed"] == [
        {"id": old, "reason": "expired", "replacement_id": new, "relation_type": "INVALIDATED_BY"}]
    assert response["state_filter"]["replacements"] == [
        {"id": new, "replaces_id": old, "relation_type": "INVALIDATED_BY"}]


def test_two_hop_chain_resolves_to_head(store):
    a = store.store("alpha plan version one")
    b = store.supersede(a, "second draft of the roadmap")["memory_id"]
    c = store.supersede(b, "third and final roadmap", relation="EVOLVED_INTO")["memory_id"]
    response = store.recall("alpha plan", state_debug=True)
    assert ids(response) == [c]
    assert response["results"][0]["state_replaces"] == a
    # Provenance is the first hop's relation.
    assert response["state_filter"]["suppressed"][0]["relation_type"] == "INVALIDATED_BY"


def test_cycle_stops_and_surfaces_the_other_node(store):
    a, b = chain(store, ["cycle start kappa", "cycle partner node"])
    store.associate(b, a, type="INVALIDATED_BY")
    response = store.recall("kappa")
    assert ids(response) == [b]


def test_seven_hop_chain_surfaces_fifth_node(store):
    nodes = chain(store, ["omega origin"] + [f"step node {i}" for i in range(1, 8)])
    response = store.recall("omega origin")
    assert ids(response) == [nodes[5]]


def test_chain_through_non_current_head_keeps_deepest_current(store):
    a, b, c = chain(store, ["sigma original", "sigma middle current", "archived end"])
    store.update(c, archived=True)
    response = store.recall("sigma original", limit=1)
    assert ids(response) == [b]


def test_replacement_outside_tag_scope_is_not_injected(store):
    old = store.store("tagged decision zeta", tags=["proj"])
    store.supersede(old, "replacement outside scope", tags=["other"])
    response = store.recall("zeta", tags=["proj"])
    assert response["results"] == []
    assert response["state_filter"]["suppressed_count"] == 1
    assert response["state_filter"]["replacement_count"] == 0


def test_replacement_already_present_is_not_duplicated(store):
    old = store.store("theta engine choice")
    new = store.supersede(old, "theta engine replaced")["memory_id"]
    response = store.recall("theta engine", limit=5)
    assert ids(response) == [new]


def test_contradicts_never_suppresses(store):
    a = store.store("lambda is fast")
    b = store.store("lambda is slow")
    store.associate(a, b, type="CONTRADICTS")
    assert set(ids(store.recall("lambda", limit=5, adaptive_floor=False))) == {a, b}


def test_history_mode_returns_superseded_and_has_no_state_filter(store):
    old = store.store("history check mu")
    store.supersede(old, "newer mu fact")
    response = store.recall("history check", state_mode="history")
    assert ids(response) == [old]
    assert "state_filter" not in response and response["state_mode"] == "history"
    legacy = store.recall("history check", current_only="false")
    assert ids(legacy) == [old] and legacy["state_mode"] == "history"
    # current_only wins over state_mode when both are given
    assert store.recall("history check", current_only=True, state_mode="history")["state_mode"] == "current"
    with pytest.raises(ValidationError):
        store.recall("history check", state_mode="both", current_only=True)


def test_archived_stays_out_even_in_history(store):
    memory_id = store.store("archived nu note")
    store.update(memory_id, archived=True)
    assert store.recall("archived nu", state_mode="history")["results"] == []


# Every recall leg honours the filter: a superseded memory that the leg would
# return is replaced (or dropped) before the answer goes out.

def test_vector_leg(memory_store):
    s = memory_store
    old = s.store("vector leg old", embedding=[1.0] + [0.0] * 383)
    new = s.supersede(old, "other text entirely", embedding=[0.0, 1.0] + [0.0] * 382)["memory_id"]
    response = s.recall(embedding=[1.0] + [0.0] * 383, limit=1)
    assert ids(response) == [new] and response["results"][0]["match_type"] == "state_replacement"


def test_trending_leg(store):
    old = store.store("trending leg", importance=1.0)
    new = store.supersede(old, "low importance successor", importance=0.0)["memory_id"]
    assert ids(store.recall(limit=1)) == [new]


def test_relation_expansion_leg(store):
    seed = store.store("expansion seed xi")
    old = store.store("neighbour old")
    store.associate(seed, old, type="RELATES_TO", strength=0.9)
    new = store.supersede(old, "neighbour successor")["memory_id"]
    response = store.recall("xi", expand_relations=True)
    assert old not in ids(response)
    assert new in ids(response)


def test_entity_expansion_leg(store):
    store.store("omicron seed", tags=["entity:people:rachel"])
    old = store.store("rachel works at acme", tags=["entity:people:rachel"])
    new = store.supersede(old, "rachel moved to initech")["memory_id"]
    response = store.recall("omicron", expand_entities=True)
    assert old not in ids(response)
    assert new in ids(response)


def test_scope_fallback_leg(memory_store):
    s = memory_store
    s.store("pi scoped item", tags=["scope"])
    old = s.store("pi outside old", tags=["elsewhere"])
    s.supersede(old, "pi outside new", tags=["elsewhere"])
    response = s.recall("pi", tags=["scope"], scope_fallback=True, limit=5)
    assert old not in ids(response)
    assert all(r["memory"]["t_invalid"] is None for r in response["results"])


def test_supersession_heads_ask_once_per_memory_and_answer_as_active_replacements(store, monkeypatch):
    import localmem.recall.state as state_module
    from localmem.timeparse import format_timestamp
    a, b, c = chain(store, ["head walk one", "head walk two", "head walk three"])
    lone = store.store("no successor here")
    backend, now_iso = store.backend, format_timestamp(store.now())
    original = state_module.active_replacements
    expected = original(backend, [a, b, c, lone], now_iso)
    asked: list[list[str]] = []

    def counting(backend_, ids, now):
        asked.append(list(ids))
        return original(backend_, ids, now)

    monkeypatch.setattr(state_module, "active_replacements", counting)
    heads = state_module.SupersessionHeads(backend, now_iso)
    first = heads([a, lone, b])
    second = heads([b, c, a, lone])
    assert first == {k: expected[k] for k in (a, b)} and first[a]["memory"]["id"] == c
    assert second == {k: expected[k] for k in (b, a)}
    assert asked == [[a, lone, b], [c]]  # each memory looked up once
