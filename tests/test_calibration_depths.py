"""The calibration's depth measurement, counted instead of sorted (issue 44, item 4): the same
depths and sample recall, to the bit, as the sorting version it replaced (kept here as the
reference), on samples full of ties (few dimensions, repeated vectors, clusters)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from localmem.storage import code_calibration as calibration
from localmem.storage.code_calibration import (DEPTH_QUANTILE, DEPTH_QUERIES, NEIGHBOURS, Depths, encode,
                                               hamming, measure_depths, measured_thresholds, words)


def _sorted_ranks(table: np.ndarray, queries: np.ndarray, truths: np.ndarray) -> np.ndarray:
    ranks = []
    for start in range(0, len(queries), 8):
        chunk = queries[start: start + 8]
        distances = np.bitwise_count(table[None, :, :] ^ table[chunk][:, None, :]).sum(axis=2, dtype=np.uint16)
        distances[np.arange(len(chunk)), chunk] = np.iinfo(np.uint16).max
        ordered = np.sort(distances, axis=1)
        theirs = np.take_along_axis(distances, truths[start: start + 8], axis=1)
        ranks.extend(np.searchsorted(o, d, side="right") for o, d in zip(ordered, theirs))
    return np.concatenate(ranks)


def sorting_depths(sample: np.ndarray, t: calibration.Thresholds, rng: np.random.Generator) -> Depths:
    """measure_depths as it was written with full stable sorts."""
    rows = len(sample)
    if rows <= NEIGHBOURS + 1:
        return Depths(1.0, 1.0, None, rows)
    unit = sample / np.maximum(np.linalg.norm(sample, axis=1, keepdims=True), 1e-30)
    code_words = words(encode(sample, t))
    per = code_words.shape[1] // 3
    sign_words = code_words[:, per: 2 * per]
    queries = rng.choice(rows, size=min(DEPTH_QUERIES, rows), replace=False)
    cosines = unit[queries] @ unit.T
    cosines[np.arange(len(queries)), queries] = -np.inf
    truths = np.argpartition(-cosines, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
    ranks1 = _sorted_ranks(sign_words, queries, truths)
    ranks3 = _sorted_ranks(code_words, queries, truths)
    depth1 = float(np.quantile(ranks1, DEPTH_QUANTILE)) / (rows - 1)
    depth3 = float(np.quantile(ranks3, DEPTH_QUANTILE)) / (rows - 1)
    found = 0
    pool, shortlist = max(1, math.ceil(depth1 * rows)), max(1, math.ceil(depth3 * rows))
    for q, truth in zip(queries, list(truths)):
        d1 = hamming(sign_words, sign_words[q]).astype(np.int32)
        d1[q] = 1 << 30
        chosen = np.argsort(d1, kind="stable")[:pool]
        d3 = hamming(code_words[chosen], code_words[q])
        short = chosen[np.argsort(d3, kind="stable")[:shortlist]]
        found += len(set(truth.tolist()) & set(short.tolist()))
    return Depths(depth1, depth3, found / (NEIGHBOURS * len(queries)), rows)


def samples():
    rng = np.random.default_rng(44)
    for rows, dims in ((12, 8), (13, 8), (40, 8), (200, 16), (500, 5), (800, 64), (2000, 384)):
        yield f"gaussian {rows}x{dims}", rng.standard_normal((rows, dims)).astype(np.float32)
    base = rng.standard_normal((30, 24)).astype(np.float32)
    yield "repeated vectors", np.repeat(base, 20, axis=0)
    centres = rng.standard_normal((5, 48)).astype(np.float32) * 3
    yield "clusters", (centres[rng.integers(0, 5, 1500)] + 0.1 * rng.standard_normal((1500, 48))).astype(np.float32)
    yield "one direction", (np.ones((300, 32)) + 0.01 * rng.standard_normal((300, 32))).astype(np.float32)


@pytest.mark.parametrize("label, sample", list(samples()), ids=lambda v: v if isinstance(v, str) else "")
def test_counted_depths_are_the_sorted_ones(label, sample):
    for thresholds in (measured_thresholds(sample), calibration.default_thresholds(sample.shape[1])):
        for seed in (0, 1, 2):
            counted = measure_depths(sample, thresholds, np.random.default_rng(seed))
            assert counted == sorting_depths(sample, thresholds, np.random.default_rng(seed)), label
