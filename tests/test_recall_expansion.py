"""Relation expansion, entity expansion, related(), relation hydration, recency bias, scope fallback."""

from __future__ import annotations

import pytest

from localmem import NotFoundError, ValidationError


@pytest.fixture
def store(memory_store_factory):
    return memory_store_factory(embedder="none")


def ids(response):
    return [r["id"] for r in response["results"]]


def by_id(response):
    return {r["id"]: r for r in response["results"]}


def raw_edge(store, src, dst, type_, strength=0.5):
    """Insert a system edge (not authorable through associate)."""
    with store.conn:
        store.conn.execute(
            "INSERT INTO edges (src, dst, type, strength, updated_at, properties) "
            "SELECT a.pk, b.pk, ?, ?, '2025-01-01T00:00:00+00:00', '{}' FROM memories a, memories b "
            "WHERE a.id = ? AND b.id = ?", (type_, strength, src, dst))


def test_neighbour_is_appended_with_relation_score(store):
    seed = store.store("rho kernel tuning notes")
    out_n = store.store("unrelated outgoing neighbour")
    in_n = store.store("unrelated incoming neighbour")
    store.associate(seed, out_n, type="LEADS_TO", strength=0.8)
    store.associate(in_n, seed, type="PART_OF", strength=0.4)
    response = store.recall("rho kernel", expand_relations=True)
    assert ids(response)[0] == seed
    results = by_id(response)
    seed_score = results[seed]["final_score"]
    expanded = results[out_n]
    assert expanded["match_type"] == "relation"
    assert expanded["relation_score"] == pytest.approx(0.8 + 0.25 * seed_score)
    assert expanded["score_components"]["relation"] == pytest.approx(0.8 + 0.25 * seed_score)
    assert expanded["relations"][0]["from"] == seed and expanded["relations"][0]["type"] == "LEADS_TO"
    assert results[in_n]["relation_score"] == pytest.approx(0.4 + 0.25 * seed_score)
    # Expansions come after the seeds, best first.
    assert ids(response)[1:] == [out_n, in_n]
    assert response["expansion"] == {"enabled": True, "seed_count": 1, "expanded_count": 2,
                                     "relation_limit": 5, "expansion_limit": 25, "respect_tags": False}


def test_system_edges_are_not_followed(store):
    seed = store.store("sigma seed text")
    similar = store.store("similar memory")
    raw_edge(store, seed, similar, "SIMILAR_TO", 0.95)
    raw_edge(store, seed, similar, "PRECEDED_BY", 0.95)
    assert ids(store.recall("sigma", expand_relations=True)) == [seed]


def test_relation_and_expansion_limits(store):
    seeds = [store.store(f"tau seed {i}") for i in range(2)]
    for s in seeds:
        for j in range(4):
            store.associate(s, store.store(f"leaf {s[:4]} {j}"), strength=0.5)
    response = store.recall("tau seed", expand_relations=True, relation_limit=2, adaptive_floor=False)
    assert response["expansion"]["expanded_count"] == 4
    response = store.recall("tau seed", expand_relations=True, relation_limit=4, expansion_limit=3,
                            adaptive_floor=False)
    assert response["expansion"]["expanded_count"] == 3


def test_strength_and_importance_minimums(store):
    seed = store.store("upsilon seed")
    weak = store.store("weak link", importance=0.9)
    dull = store.store("strong link dull", importance=0.1)
    store.associate(seed, weak, strength=0.2)
    store.associate(seed, dull, strength=0.9)
    got = ids(store.recall("upsilon", expand_relations=True, expand_min_strength=0.5))
    assert dull in got and weak not in got
    got = ids(store.recall("upsilon", expand_relations=True, expand_min_importance=0.5))
    assert weak in got and dull not in got


def test_expansion_bypasses_tag_scope_unless_asked(store):
    seed = store.store("phi seed", tags=["team"])
    outside = store.store("phi neighbour elsewhere", tags=["other"])
    store.associate(seed, outside, strength=0.7)
    assert outside in ids(store.recall("seed", tags=["team"], expand_relations=True))
    respected = store.recall("seed", tags=["team"], expand_relations=True, expand_respect_tags=True)
    assert outside not in ids(respected)
    assert respected["expansion"]["respect_tags"] is True


def test_exclude_tags_and_time_window_always_apply_to_expansions(store):
    seed = store.store("chi seed", timestamp="2025-03-01T00:00:00Z")
    excluded = store.store("chi excluded", tags=["secret"], timestamp="2025-03-01T00:00:00Z")
    old = store.store("chi too old", timestamp="2020-01-01T00:00:00Z")
    store.associate(seed, excluded)
    store.associate(seed, old)
    got = ids(store.recall("chi seed", expand_relations=True, exclude_tags=["secret"],
                           start="2025-01-01T00:00:00Z"))
    assert got == [seed]


def test_results_carry_outgoing_relations(store):
    a = store.store("psi source")
    b = store.store("psi target with a summary. And more.")
    store.associate(a, b, type="DERIVED_FROM", strength=0.6, transformation="copy")
    [hit] = [r for r in store.recall("psi source")["results"] if r["id"] == a]
    [relation] = hit["relations"]
    assert relation["type"] == "DERIVED_FROM" and relation["strength"] == 0.6
    assert relation["memory"]["id"] == b
    assert relation["memory"]["summary"] == "psi target with a summary."


def test_entity_expansion_searches_each_entity_in_its_category(store):
    seed = store.store("Sarah's sister is Rachel", tags=["entity:people:rachel"],
                       metadata={"entities": {"places": ["Paris"]}})
    job = store.store("Works as an architect", tags=["entity:people:rachel"])
    trip = store.store("A week of museums", tags=["entity:places:paris"])
    response = store.recall("sister", expand_entities=True)
    results = by_id(response)
    assert ids(response)[0] == seed
    assert results[job]["match_type"] == "entity_expansion"
    assert results[job]["expanded_from_entity"] == "rachel"
    assert results[job]["score_components"]["entity_expansion"] == 0.15
    assert results[trip]["expanded_from_entity"] == "paris"
    assert response["entity_expansion"]["expanded_count"] == 2
    assert set(response["entity_expansion"]["entities_found"]) == {"rachel", "paris"}


def test_related_walks_one_to_three_hops(store):
    a, b, c, d = (store.store(f"node {n}", importance=imp) for n, imp in
                  (("a", 0.5), ("b", 0.2), ("c", 0.9), ("d", 0.5)))
    store.associate(a, b)
    store.associate(c, b, type="LEADS_TO")  # undirected: a - b - c
    store.associate(c, d, type="CONTRADICTS")
    one = store.related(a)
    assert [m["id"] for m in one["related_memories"]] == [b]
    two = store.related(a, max_depth=2)
    assert [m["id"] for m in two["related_memories"]] == [c, b]  # importance order
    three = store.related(a, max_depth=3, limit=10)
    assert {m["id"] for m in three["related_memories"]} == {b, c, d}
    only = store.related(a, relationship_types="RELATES_TO", max_depth=3)
    assert [m["id"] for m in only["related_memories"]] == [b]
    assert store.related(a, max_depth=9)["max_depth"] == 3
    with pytest.raises(ValidationError):
        store.related(a, relationship_types=["BOGUS"])
    with pytest.raises(NotFoundError):
        store.related("00000000-0000-4000-8000-000000000000")


def test_recency_bias_reorders_toward_newer(memory_store_factory):
    store = memory_store_factory(embedder="none")
    old = store.store("omega status report", timestamp="2023-01-01T00:00:00Z", importance=0.6)
    new = store.store("omega status update", timestamp="2024-06-01T00:00:00Z", importance=0.4)  # both past the recency window
    plain = store.recall("omega status", adaptive_floor=False)
    assert ids(plain)[0] == old and "recency_bias" not in plain
    biased = store.recall("omega status", recency_bias="on", adaptive_floor=False)
    assert ids(biased)[0] == new and biased["recency_bias"] == "on"
    assert by_id(biased)[new]["score_components"]["temporal"] == 1.0
    assert by_id(biased)[old]["score_components"]["temporal"] == 0.0
    assert ids(store.recall("latest omega status", recency_bias="auto", adaptive_floor=False))[0] == new
    assert ids(store.recall("omega status", recency_bias="auto", adaptive_floor=False))[0] == old


def test_scope_fallback_fills_from_outside_scope(memory_store):
    s = memory_store
    inside = s.store("gamma pipeline inside", tags=["scope"])
    outside = s.store("gamma pipeline outside", tags=["other"])
    strict = s.recall("gamma pipeline", tags=["scope"], limit=3)
    assert ids(strict) == [inside]
    filled = s.recall("gamma pipeline", tags=["scope"], limit=3, scope_fallback=True)
    assert ids(filled)[0] == inside and outside in ids(filled)
    assert by_id(filled)[outside]["outside_tag_scope"] is True
    assert filled["scope_fallback"] is True
