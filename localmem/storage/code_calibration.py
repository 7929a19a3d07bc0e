"""Calibrating the vector codes to a store's own vectors (pure numpy functions).

Each dimension gets three thresholds, low < mid < high. The code of a
vector is x > low, x > mid, x > high per dimension; the middle bits alone are
a 1-bit code. Fixed thresholds (0 and ±0.7/sqrt(d), the spread of a random
unit vector's components) suit vectors spread evenly around the origin, as
MiniLM's are; vectors that share a common direction (bge/e5-style models) or
a narrow spread would get nearly identical codes. So the thresholds are the
per-dimension mean and mean ± 0.7 standard deviations of a sample of the
store, and the scan depths (what share of the store each stage keeps) are
measured on that sample: how deep in the code order the true ten nearest
neighbours of sample vectors lie.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SPREAD = 0.7  # thresholds at ±0.7 standard deviations around the mean
SAMPLE_ROWS = 8192  # vectors read for a calibration
DEPTH_QUERIES = 48  # sample vectors used as queries when measuring the depths
DEPTH_QUANTILE = 0.98  # the share of true neighbours the measured depths keep
NEIGHBOURS = 10
DRIFT_LIMIT = 0.1  # recode the store when the thresholds move this far (in spreads)


def padded_dimensions(dims: int) -> int:
    """Bit codes need a multiple of 8 dimensions; zero padding adds the same bits to every code."""
    return (dims + 7) // 8 * 8


@dataclass(frozen=True)
class Thresholds:
    """Per padded dimension, float32: the code is x > low, x > mid, x > high."""

    low: np.ndarray
    mid: np.ndarray
    high: np.ndarray

    @property
    def dims(self) -> int:
        return len(self.mid)

    def blobs(self) -> dict[str, bytes]:
        return {"low": self.low.tobytes(), "mid": self.mid.tobytes(), "high": self.high.tobytes()}

    @classmethod
    def from_blobs(cls, low: bytes, mid: bytes, high: bytes) -> "Thresholds":
        return cls(*(np.frombuffer(b, dtype=np.float32) for b in (low, mid, high)))


def default_thresholds(dims: int) -> Thresholds:
    """Thresholds for a store with no vectors yet: 0 and ±0.7/sqrt(dims)."""
    padded = padded_dimensions(dims)
    spread = np.zeros(padded, dtype=np.float32)
    spread[:dims] = SPREAD / math.sqrt(dims)
    mid = np.zeros(padded, dtype=np.float32)
    return Thresholds(-spread, mid, spread)


def measured_thresholds(sample: np.ndarray) -> Thresholds:
    """Thresholds from a sample of the store's vectors (rows: float32 vectors)."""
    dims = sample.shape[1]
    padded = padded_dimensions(dims)
    mid = np.zeros(padded, dtype=np.float32)
    spread = np.zeros(padded, dtype=np.float32)
    mid[:dims] = sample.mean(axis=0)
    spread[:dims] = SPREAD * sample.std(axis=0)
    return Thresholds(mid - spread, mid, mid + spread)


def drift(old: Thresholds, new: Thresholds) -> float:
    """How far the thresholds moved: mean shift of the mid in old spreads, plus the spread's change."""
    old_spread = (old.high - old.mid).astype(np.float64)
    new_spread = (new.high - new.mid).astype(np.float64)
    used = old_spread > 0
    if not used.any():
        return math.inf
    shift = np.abs(new.mid[used] - old.mid[used]) / old_spread[used]
    scale = np.abs(new_spread[used] / old_spread[used] - 1.0)
    return float(shift.mean() + scale.mean())


def pad(vectors: np.ndarray, padded: int) -> np.ndarray:
    """Rows padded with zeros to ``padded`` dimensions (float32)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape[-1] == padded:
        return vectors
    out = np.zeros(vectors.shape[:-1] + (padded,), dtype=np.float32)
    out[..., : vectors.shape[-1]] = vectors
    return out


def encode(vectors: np.ndarray, t: Thresholds) -> np.ndarray:
    """The codes of float32 rows as uint8 rows: low bits, mid bits, high bits.

    The same bits as vector_codes.sql (sqlite-vec's vec_quantize_binary of
    x - threshold, little-endian bit order in each byte).
    """
    x = pad(np.atleast_2d(vectors), t.dims)
    parts = [np.packbits((x - level) > 0, axis=1, bitorder="little") for level in (t.low, t.mid, t.high)]
    return np.concatenate(parts, axis=1)


def words(codes: np.ndarray, segments: int = 3) -> np.ndarray:
    """uint8 code rows as uint64 words, each segment zero-padded to whole words."""
    rows, width = codes.shape
    segment = width // segments
    per = (segment + 7) // 8 * 8
    out = np.zeros((rows, segments * per), dtype=np.uint8)
    for s in range(segments):
        out[:, s * per: s * per + segment] = codes[:, s * segment: (s + 1) * segment]
    return out.view(np.uint64)


def hamming(code_words: np.ndarray, query_words: np.ndarray) -> np.ndarray:
    """Hamming distance of each row of uint64 words to the query's words (uint16)."""
    counts = np.bitwise_count(code_words ^ query_words)
    if counts.ndim == 1:
        return counts.astype(np.uint16)
    total = counts[:, 0].astype(np.uint16)
    for word in range(1, counts.shape[1]):  # column adds: a third faster than sum(axis=1) on 18 words
        total += counts[:, word]
    return total


def _neighbour_ranks(table: np.ndarray, queries: np.ndarray, truths: np.ndarray) -> np.ndarray:
    """For each query row and each of its true neighbours: how many other rows are at most
    as far from the query in Hamming distance (the depth a scan must reach to keep it)."""
    beyond = min(table.shape[1] * 64 + 1, np.iinfo(np.uint16).max)  # the query's own row: past any code
    ranks = []
    for start in range(0, len(queries), 8):  # eight queries at a time bounds the scratch memory
        chunk = queries[start: start + 8]
        distances = np.bitwise_count(table[None, :, :] ^ table[chunk][:, None, :]).sum(axis=2, dtype=np.uint16)
        distances[np.arange(len(chunk)), chunk] = beyond
        theirs = np.take_along_axis(distances, truths[start: start + 8], axis=1)
        # Rows at most d away, for every d at once: a running count, not a sort of the rows.
        ranks.extend(np.cumsum(np.bincount(row, minlength=beyond + 1))[d] for row, d in zip(distances, theirs))
    return np.concatenate(ranks)


@dataclass(frozen=True)
class Depths:
    """The share of a store each scan stage keeps (1-bit pool, then 3-bit shortlist)."""

    one_bit: float
    three_bit: float
    sample_recall: float | None
    sample_rows: int


def measure_depths(sample: np.ndarray, t: Thresholds, rng: np.random.Generator) -> Depths:
    """How deep the true nearest neighbours of sample vectors lie in each code order.

    Each of up to DEPTH_QUERIES sample vectors asks for its NEIGHBOURS nearest
    other sample vectors by cosine; a neighbour's rank in a code order is the
    number of other vectors at most as far in Hamming distance. The depths are
    the DEPTH_QUANTILE quantile of those ranks as a share of the sample.
    """
    rows = len(sample)
    if rows <= NEIGHBOURS + 1:
        return Depths(1.0, 1.0, None, rows)
    unit = sample / np.maximum(np.linalg.norm(sample, axis=1, keepdims=True), 1e-30)
    code_words = words(encode(sample, t))
    per = code_words.shape[1] // 3
    sign_words = code_words[:, per: 2 * per]
    queries = rng.choice(rows, size=min(DEPTH_QUERIES, rows), replace=False)
    cosines = unit[queries] @ unit.T  # one matrix product: a loop of matrix-vector products is far slower
    cosines[np.arange(len(queries)), queries] = -np.inf
    truths = np.argpartition(-cosines, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]
    ranks1 = _neighbour_ranks(sign_words, queries, truths)
    ranks3 = _neighbour_ranks(code_words, queries, truths)
    kept = list(truths)
    depth1 = float(np.quantile(ranks1, DEPTH_QUANTILE)) / (rows - 1)
    depth3 = float(np.quantile(ranks3, DEPTH_QUANTILE)) / (rows - 1)
    # What the two stages at these depths find on the sample itself.
    found = 0
    pool, shortlist = max(1, math.ceil(depth1 * rows)), max(1, math.ceil(depth3 * rows))
    order = np.arange(rows, dtype=np.int64)
    for q, truth in zip(queries, kept):
        # The stages keep the `pool` nearest by 1-bit distance, then the `shortlist` nearest of
        # those by 3-bit distance, ties in the order of a stable sort (by 1-bit distance, then
        # row). Only which rows are kept counts, so each stage takes the smallest of unique keys
        # that encode that order (a partition, not a sort).
        d1 = hamming(sign_words, sign_words[q]).astype(np.int64)
        d1[q] = 1 << 30
        key1 = d1 * rows + order
        chosen = np.argpartition(key1, pool - 1)[:pool] if pool < rows else order
        key3 = hamming(code_words[chosen], code_words[q]).astype(np.int64) * (((1 << 30) + 1) * rows) + key1[chosen]
        short = chosen[np.argpartition(key3, shortlist - 1)[:shortlist]] if shortlist < len(chosen) else chosen
        found += len(set(truth.tolist()) & set(short.tolist()))
    return Depths(depth1, depth3, found / (NEIGHBOURS * len(queries)), rows)
