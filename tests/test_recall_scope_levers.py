"""Keyword idf of a narrowed scope and centred cosines (issue 16): the pure
functions, and what they change in a recall."""

from __future__ import annotations

import numpy as np
import pytest

from localmem import Config
from localmem.recall.centering import centred_cosine
from localmem.recall.scoped_keywords import reweighted_scores, scope_ideal, scope_idf, store_idf

from store_helpers import unit


# -- pure functions: scope idf -------------------------------------------------

def test_scope_idf_stays_positive_where_bm25_idf_is_floored():
    # A word in 4 of 5 memories: BM25's idf is floored to (almost) nothing,
    # the scope idf still gives it a little weight, less than a rare word's.
    assert store_idf(5, 4) < 1e-5
    assert 0 < scope_idf(5, 4) < scope_idf(5, 1)
    assert scope_idf(5, 5) > 0


def test_scope_idf_falls_as_more_memories_match():
    values = [scope_idf(100, hits) for hits in (1, 5, 20, 50, 100)]
    assert values == sorted(values, reverse=True)


def test_scope_ideal_counts_an_absent_keyword_as_the_mean_of_the_others():
    assert scope_ideal({"a": 1.0, "b": 3.0, "missing": None}) == pytest.approx(6.0)
    assert scope_ideal({"missing": None}) == pytest.approx(1.0)


def test_reweighting_moves_weight_from_scope_common_to_scope_rare_words():
    # Store-wide, "piano" is rarer than "violin"; in the scope it is the other way round.
    per_term = {"piano": {"p": 4.0}, "violin": {"v": 2.0}}
    store = {"piano": 2.0, "violin": 1.0}
    scope = {"piano": 0.2, "violin": 1.5}
    scores = reweighted_scores(per_term, store, scope, ideal=1.7)
    assert scores["v"] > scores["p"]
    assert all(0.0 <= s <= 1.0 for s in scores.values())


def test_reweighting_skips_words_no_memory_in_scope_has_and_caps_at_one():
    scores = reweighted_scores({"a": {"x": 10.0}, "gone": {"y": 5.0}}, {"a": 1.0, "gone": 1.0},
                               {"a": 2.0, "gone": None}, ideal=2.0)
    assert scores == {"x": 1.0}
    assert reweighted_scores({"a": {"x": 1.0}}, {"a": 1.0}, {"a": 1.0}, ideal=0.0) == {}


# -- pure functions: centring ----------------------------------------------------

def test_centred_cosine_equals_the_cosine_of_the_centred_vectors():
    rng = np.random.default_rng(7)
    for _ in range(20):
        q, d = (v / np.linalg.norm(v) for v in rng.normal(size=(2, 16)))
        m = rng.normal(size=16) * 0.3 + q * 0.2
        direct = float((q - m) @ (d - m) / (np.linalg.norm(q - m) * np.linalg.norm(d - m)))
        assert centred_cosine(float(q @ d), float(q @ m), float(d @ m), float(m @ m)) == \
            pytest.approx(direct, abs=1e-9)


def test_centred_cosine_is_undefined_for_a_vector_at_the_centre():
    # q equals the (unit) centre: q - m is zero.
    assert centred_cosine(0.3, 1.0, 0.3, 1.0) is None


# -- in a recall -------------------------------------------------------------------

def _instrument_store(factory, config: Config):
    store = factory(embedder=None, config=config)
    items = [{"content": f"piano lesson number {i}", "tags": ["a"]} for i in range(4)]
    items.append({"content": "violin lesson", "tags": ["a"]})
    items += [{"content": f"violin recital {i}", "tags": ["b"]} for i in range(10)]
    items += [{"content": f"unrelated note {i}", "tags": ["c"]} for i in range(10)]
    store.store_many(items)
    return store


def _top(store, **kwargs):
    response = store.recall("piano violin", limit=5, adaptive_floor=False, **kwargs)
    return response["results"][0]["memory"]["content"]


def test_a_tag_scoped_recall_weighs_keywords_by_their_rarity_in_the_scope(memory_store_factory):
    on = _instrument_store(memory_store_factory, Config())
    off = _instrument_store(memory_store_factory, Config(keyword_scope_idf=False))
    # In scope "a", "violin" is the rare word; store-wide, "piano" is.
    assert _top(on, tags=["a"]) == "violin lesson"
    assert _top(off, tags=["a"]).startswith("piano lesson")


def test_an_unscoped_recall_keeps_the_store_wide_keyword_scores(memory_store_factory):
    on = _instrument_store(memory_store_factory, Config())
    off = _instrument_store(memory_store_factory, Config(keyword_scope_idf=False))
    def scores(store):
        return [(r["memory"]["content"], r["score_components"]["keyword"])
                for r in store.recall("piano violin", limit=20, adaptive_floor=False)["results"]]
    assert scores(on) == scores(off)


def _centring_store(factory, config: Config):
    store = factory(config=config)
    rng = np.random.default_rng(3)
    # Most memories share one direction (index 0): the store's register.
    fillers = []
    for i in range(40):
        noise = [(10 + int(j), float(v)) for j, v in zip(rng.integers(0, 300, 3), rng.normal(0, 0.1, 3))]
        fillers.append({"content": f"filler {i}", "embedding": unit((0, 1.0), *noise)})
    store.store_many(fillers)
    common = store.store("common talk", embedding=unit((0, 1.0), (5, 0.05)))
    specific = store.store("specific fact", embedding=unit((0, 0.2), (1, 1.0)))
    return store, common, specific


def test_centring_ranks_the_memory_that_shares_the_query_s_own_direction_first(memory_store_factory):
    query = unit((0, 1.0), (1, 0.5))
    for config, first in ((Config(), "specific"), (Config(vector_centering=False), "common")):
        store, common, specific = _centring_store(memory_store_factory, config)
        response = store.recall(embedding=query, limit=50, adaptive_floor=False)
        order = [r["id"] for r in response["results"]]
        assert (order.index(specific) < order.index(common)) == (first == "specific")


def test_a_store_too_small_for_a_mean_keeps_plain_cosines(memory_store):
    memory_id = memory_store.store("one memory", embedding=unit((0, 1.0)))
    response = memory_store.recall(embedding=unit((0, 0.8), (1, 0.6)), adaptive_floor=False)
    [result] = response["results"]
    assert result["id"] == memory_id
    assert result["score_components"]["vector"] == pytest.approx(0.8, abs=1e-6)


def test_config_switches_read_from_the_environment():
    assert Config.from_env({}).keyword_scope_idf and Config.from_env({}).vector_centering
    off = Config.from_env({"LOCALMEM_KEYWORD_SCOPE_IDF": "0", "LOCALMEM_VECTOR_CENTERING": "off"})
    assert not off.keyword_scope_idf and not off.vector_centering
    from localmem.errors import ConfigError
    with pytest.raises(ConfigError, match="LOCALMEM_VECTOR_CENTERING"):
        Config.from_env({"LOCALMEM_VECTOR_CENTERING": "maybe"})


def test_scope_statistics_follow_a_write_into_the_scope(memory_store_factory):
    def keyword_of(store, content):
        results = store.recall("piano violin", tags=["a"], limit=20, adaptive_floor=False)["results"]
        return next(r["score_components"]["keyword"] for r in results if r["memory"]["content"] == content)

    warm = _instrument_store(memory_store_factory, Config())
    before = keyword_of(warm, "violin lesson")  # the scope's counts are now cached
    extra = [{"content": f"violin practice {i}", "tags": ["a"], "timestamp": "2024-01-01T00:00:00Z"}
             for i in range(3)]
    warm.store_many(extra)
    fresh = _instrument_store(memory_store_factory, Config())
    fresh.store_many(extra)
    after = keyword_of(warm, "violin lesson")
    assert after != before  # "violin" is less rare in scope "a" now
    assert after == keyword_of(fresh, "violin lesson")


def test_channels_read_the_cosine_to_the_centre_the_centring_statement_gives(memory_store_factory):
    import json
    from localmem.recall.centering import centred_similarities, usable_centre
    from localmem.recall.channels import keyword_candidates, make_scope, vector_candidates
    from localmem.recall.keywords import KeywordScorer
    from localmem.recall.params import parse_recall_params
    store, _common, _specific = _centring_store(memory_store_factory, Config())
    backend = store.backend
    centre = usable_centre(backend)
    assert centre is not None
    scope = make_scope(parse_recall_params({}, store.config, store.dimensions, store.now()),
                       store.config.excluded_types)
    query = np.asarray(unit((0, 1.0), (1, 0.5)), dtype=np.float32).tobytes()
    found = vector_candidates(backend, scope, query, 10, centre.blob)
    found += keyword_candidates(backend, scope, KeywordScorer(backend, "specific fact"), query, 10, [], centre.blob)
    asked = dict(store.conn.execute(backend.sql["recall_centre_cosines"],
                                    {"ids": json.dumps([c["id"] for c in found]), "centre": centre.blob}))
    assert len(found) > 10 and all(c["_centre_cosine"] == asked[c["id"]] for c in found)
    # Without a centre the channels read none, and the centred cosines come out the same.
    plain = vector_candidates(backend, scope, query, 10)
    assert all("_centre_cosine" not in c for c in plain)
    assert centred_similarities(backend, plain, query) == centred_similarities(backend, found[:10], query, centre)
