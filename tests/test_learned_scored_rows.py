"""The learned ranking computes features only for the candidates its trees score, and walks the
trees one look-up per level: both give the floats the whole computation gives (issue 44, item 3)."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from localmem.recall.late_interaction import TokenMatch
from localmem.recall.learned_rank import (FEATURES, LEARNED_TOP, TreeModel, learned_components,
                                          pool_features)
from localmem.timegrammar.mentions import find_calendar_mention

from test_learned_rank import candidate, model_dict

NOW = datetime(2024, 1, 1, tzinfo=timezone.utc)
STAMPS = [f"2023-05-{day:02d}T10:00:00+00:00" for day in (1, 7, 8, 20)]


def token_match(random: np.random.Generator, width: int) -> TokenMatch:
    values = random.random(width)
    return TokenMatch(max_sim=float(values.mean()), best=float(values.max()), median=float(np.median(values)),
                      share_over_half=float((values > 0.5).mean()), share_over_07=float((values > 0.7).mean()),
                      tokens=int(random.integers(1, 40)), per_token=values)


def mixed_pool(seed: int, size: int = 90) -> list[dict]:
    """A pool as recall builds one: threads, questions, roles, dates, candidates without token
    matches or cosines, ties among the best and one damaged score."""
    random = np.random.default_rng(seed)
    pool = []
    for pk in range(size):
        kind = int(random.integers(0, 5))
        pool.append(candidate(
            pk + 1, float(random.random()), float(random.random()), float(random.random()),
            thread=[None, "a", "b", "c", "d"][int(random.integers(0, 5))],
            content="did you go?" if kind == 0 else "x " * int(random.integers(1, 30)),
            timestamp=STAMPS[int(random.integers(0, len(STAMPS)))],
            similarity=None if kind == 1 else float(random.random()),
            match=None if kind == 2 else token_match(random, 6),
            metadata={"role": ["user", "assistant", "narrator"][int(random.integers(0, 3))],
                      "parts": int(random.integers(1, 3))}))
    if size > 11:
        pool[5]["final_score"] = pool[9]["final_score"]  # a tie
        pool[11]["final_score"] = float("nan")  # a damaged value: no evidence
    return pool


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("query", ["where did she go on 8 May 2023?", "what did you say about it"])
def test_the_rows_asked_for_are_the_whole_pools_rows_to_the_bit(seed, query):
    pool = mixed_pool(seed)
    mention = find_calendar_mention(query, NOW, relative=False)
    whole = pool_features(pool, query, mention)
    random = np.random.default_rng(seed)
    for rows in (random.permutation(len(pool))[:LEARNED_TOP], np.arange(len(pool))[::-1], np.array([7]),
                 np.array([], dtype=np.intp)):
        got = pool_features(pool, query, mention, rows=rows)
        assert got.shape == (len(rows), len(FEATURES))
        assert np.array_equal(got, whole[rows], equal_nan=True)


def test_a_date_in_the_query_reaches_the_rows_asked_for():
    pool = mixed_pool(3)
    mention = find_calendar_mention("on 8 May 2023", NOW, relative=False)
    assert mention is not None
    got = pool_features(pool, "on 8 May 2023", mention, rows=np.array([0, 1, 2]))
    assert got[:, FEATURES.index("names_date")].tolist() == [1.0, 1.0, 1.0]
    assert (got[:, FEATURES.index("date_distance")] >= 0).all()


def whole_then_best(model: TreeModel, pool: list[dict], query: str) -> dict[int, float]:
    """learned_components as it was: every candidate's row, then the best LEARNED_TOP's."""
    rows = np.nan_to_num(pool_features(pool, query), nan=0.0, posinf=0.0, neginf=0.0)
    best = np.argsort(-rows[:, FEATURES.index("final")], kind="stable")[:LEARNED_TOP]
    raw = model.raw_scores(rows[best])
    return dict(zip(best.tolist(), (1.0 / (1.0 + np.exp(-np.clip(raw, -60.0, 60.0)))).tolist()))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_learned_components_are_those_of_the_whole_matrix(seed):
    model = TreeModel.packaged()
    for size in (90, LEARNED_TOP, 5, 1):
        pool = mixed_pool(seed, size)
        assert learned_components(model, pool, "what did she say") == whole_then_best(model, pool, "what did she say")


def walked(model: TreeModel, row: np.ndarray) -> float:
    """One row through every tree, node by node, in plain Python; leaves summed in tree order."""
    total = 0.0
    for t in range(model.feature.shape[0]):
        node = 0
        while model.feature[t, node] >= 0:
            go_left = row[model.feature[t, node]] <= model.threshold[t, node]
            node = int(model.left[t, node] if go_left else model.right[t, node])
        total += float(model.value[t, node])
    return total


def uneven_model() -> TreeModel:
    """Trees of several depths, a leaf at the root and splits on a few features."""
    deep = {"feature": [0, 3, -1, 10, -1, -1, -1], "threshold": [0.5, 0.2, 0, 0.7, 0, 0, 0],
            "left": [1, 2, 0, 4, 0, 0, 0], "right": [5, 3, 0, 6, 0, 0, 0],
            "value": [0, 0, 0.25, 0, -1.5, 2.0, 0.75]}
    stump = {"feature": [-1], "threshold": [0.0], "left": [0], "right": [0], "value": [0.125]}
    split = {"feature": [11, -1, -1], "threshold": [0.4, 0, 0], "left": [1, 0, 0], "right": [2, 0, 0],
             "value": [0, -0.5, 0.5]}
    return TreeModel.from_dict(model_dict([deep, stump, split], depth=3))


@pytest.mark.parametrize("model", [uneven_model(), TreeModel.packaged()], ids=["uneven", "packaged"])
def test_the_trees_give_what_a_walk_node_by_node_gives(model):
    random = np.random.default_rng(5)
    rows = random.random((40, len(FEATURES)))
    rows[3, :] = np.nan  # NaN goes right at every split, as numpy's comparison says
    rows[4, 0] = 0.5  # on a threshold: left
    expected = [walked(model, row) for row in rows]
    got = model.raw_scores(rows)
    assert got.shape == (40,)
    assert np.allclose(got, expected, rtol=0, atol=1e-12)
    assert model.raw_scores(rows[:0]).shape == (0,)
