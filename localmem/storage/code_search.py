"""The in-memory scan of the vector codes: which memories get an exact cosine.

A process keeps every code of ``vector_codes`` in numpy arrays and catches up
with other processes' writes through ``vector_clock`` (changed rows by
sequence number, deletions from their log; everything again when the
calibration's generation changes, or when a restore replaced the file's
contents: its ``restore_token`` in meta). A search runs in two stages:

1. the 1-bit codes (the middle threshold), kept one machine word per column
   so the scan streams through memory, pick a pool of candidates;
2. the 3-bit codes of the pool pick a shortlist;

and the shortlist's exact cosines are computed in SQL (vector_knn.sql). How
deep each stage goes is the share of the store measured at calibration
(code_calibration.measure_depths), with floors that keep small stores exact
enough. Small stores skip stage 1: the 3-bit scan of every code is cheap.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import apsw
import numpy as np

from . import code_calibration as calibration
from .statements import Statements

# The share kept is this many times the measured depth (the 98th percentile of
# neighbour ranks for sample vectors, scaled linearly to the store). On
# MiniLM-like vectors half of it kept recall@10 at 0.997 at 100k, but tight
# clusters, where the codes cannot order a cluster's members, need all of it.
DEPTH_SAFETY = 1.0
MIN_SHORTLIST = 80  # at least this many exact cosines ...
SHORTLIST_PER_K = 4  # ... and this many per result asked for
MIN_POOL = 1000  # the 1-bit pool holds at least this many ...
POOL_PER_SHORTLIST = 4  # ... and this many per shortlisted candidate
ONE_STAGE_ROWS = 20_000  # below this many codes in scope, stage 1 is skipped
MAX_SHORTLIST = 20_000
COMPACT_SHARE = 0.25  # rebuild the arrays when this share of slots is dead


def _smallest(distances: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` smallest distances (ties at the cut included, up to 2 × count)."""
    if count >= len(distances):
        return np.arange(len(distances))
    histogram = np.bincount(distances)
    cut = int(np.searchsorted(np.cumsum(histogram), count))
    chosen = np.flatnonzero(distances <= cut)
    if len(chosen) > 2 * count:
        chosen = chosen[np.argpartition(distances[chosen], count)[:count]]
    return chosen


@dataclass
class _Arrays:
    """Codes by slot: a slot per stored code, dead slots marked in ``live``."""

    pks: np.ndarray      # int64
    ts: np.ndarray       # float64, unix seconds
    live: np.ndarray     # bool
    levels: np.ndarray   # uint64 (slots, 3 × words): the whole 3-bit code
    signs: np.ndarray    # uint64 (words, slots): the 1-bit code, column by column
    size: int = 0

    @classmethod
    def empty(cls, words: int, capacity: int) -> "_Arrays":
        return cls(np.zeros(capacity, np.int64), np.zeros(capacity, np.float64),
                   np.zeros(capacity, bool), np.zeros((capacity, 3 * words), np.uint64),
                   np.zeros((words, capacity), np.uint64))

    @property
    def capacity(self) -> int:
        return len(self.pks)

    def grown(self, needed: int) -> "_Arrays":
        capacity = max(needed, 2 * self.capacity, 1024)
        out = _Arrays.empty(self.signs.shape[0], capacity)
        n = self.size
        out.pks[:n], out.ts[:n], out.live[:n] = self.pks[:n], self.ts[:n], self.live[:n]
        out.levels[:n], out.signs[:, :n] = self.levels[:n], self.signs[:, :n]
        out.size = n
        return out


class CodeIndex:
    """One process's copy of the vector codes, kept fresh from the file."""

    def __init__(self, *, one_stage_rows: int = ONE_STAGE_ROWS) -> None:
        self.one_stage_rows = one_stage_rows
        self._lock = threading.Lock()
        self._seq = -1
        self._generation: int | None = None
        self._restore_token: str | None = None
        self._arrays: _Arrays | None = None
        self._slot_of_pk = np.full(0, -1, np.int64)  # by pk: its slot, or -1
        self._thresholds: calibration.Thresholds | None = None
        self._depths = (1.0, 1.0)
        self._dead = 0

    # -- keeping up with the file -------------------------------------------

    def _load_calibration(self, conn: apsw.Connection, sql: Statements) -> bool:
        row = conn.execute(sql["vector_calibration_get"]).fetchone()
        if row is None:
            return False
        self._thresholds = calibration.Thresholds.from_blobs(row[2], row[3], row[4])
        self._depths = (float(row[5]), float(row[6]))
        return True

    def refresh(self, conn: apsw.Connection, sql: Statements) -> bool:
        """Catch up with the file; False when this connection holds uncommitted code changes
        (the caller then scores exactly, without the cache)."""
        seq, _rows, generation, token = conn.execute(sql["vector_clock_get"]).fetchone()
        if seq == self._seq and generation == self._generation and token == self._restore_token:
            return True
        if conn.txn_state("main") == apsw.SQLITE_TXN_WRITE:
            return False
        if not self._load_calibration(conn, sql):
            self._arrays, self._seq, self._generation, self._restore_token = None, seq, generation, token
            self._slot_of_pk = np.full(0, -1, np.int64)
            return True
        if generation != self._generation or self._arrays is None or seq < self._seq \
                or token != self._restore_token:
            self._arrays, self._dead, since = None, 0, -1
            self._slot_of_pk = np.full(0, -1, np.int64)
        else:
            since = self._seq
            deleted = np.array([pk for (pk,) in conn.execute(sql["vector_code_deletions_since"],
                                                             {"seq": since})], np.int64)
            deleted = deleted[deleted < len(self._slot_of_pk)]
            slots = self._slot_of_pk[deleted]
            slots = np.unique(slots[slots >= 0])
            self._arrays.live[slots] = False
            self._slot_of_pk[deleted] = -1
            self._dead += len(slots)
        self._apply(list(conn.execute(sql["vector_codes_since"], {"seq": since})))
        self._seq, self._generation, self._restore_token = seq, generation, token
        if self._arrays is not None and self._dead > COMPACT_SHARE * max(1, self._arrays.size):
            self._compact()
        return True

    def _apply(self, rows: list[tuple[int, float, bytes]]) -> None:
        if not rows:
            if self._arrays is None:
                assert self._thresholds is not None
                self._arrays = _Arrays.empty(self._words(), 0)
            return
        width = len(rows[0][2])
        rows = [r for r in rows if len(r[2]) == width]  # a damaged row is doctor's to report
        codes = calibration.words(np.frombuffer(b"".join(r[2] for r in rows), np.uint8).reshape(-1, width))
        pks = np.fromiter((r[0] for r in rows), np.int64, len(rows))
        ts = np.fromiter((r[1] for r in rows), np.float64, len(rows))
        arrays = self._arrays if self._arrays is not None else _Arrays.empty(codes.shape[1] // 3, 0)
        top = int(pks.max()) + 1
        if top > len(self._slot_of_pk):
            grown = np.full(max(top, 2 * len(self._slot_of_pk)), -1, np.int64)
            grown[: len(self._slot_of_pk)] = self._slot_of_pk
            self._slot_of_pk = grown
        slots = self._slot_of_pk[pks]
        fresh = np.flatnonzero(slots < 0)
        if len(fresh):
            if arrays.size + len(fresh) > arrays.capacity:
                arrays = arrays.grown(arrays.size + len(fresh))
            slots[fresh] = np.arange(arrays.size, arrays.size + len(fresh))
            self._slot_of_pk[pks[fresh]] = slots[fresh]
            arrays.size += len(fresh)
        words = codes.shape[1] // 3
        arrays.pks[slots], arrays.ts[slots], arrays.live[slots] = pks, ts, True
        arrays.levels[slots] = codes
        arrays.signs[:, slots] = codes[:, words: 2 * words].T
        self._arrays = arrays

    def _words(self) -> int:
        assert self._thresholds is not None
        return (self._thresholds.dims // 8 + 7) // 8

    def _compact(self) -> None:
        arrays = self._arrays
        assert arrays is not None
        keep = np.flatnonzero(arrays.live[: arrays.size])
        out = _Arrays.empty(arrays.signs.shape[0], max(1024, 2 * len(keep)))
        n = len(keep)
        out.pks[:n], out.ts[:n], out.live[:n] = arrays.pks[keep], arrays.ts[keep], True
        out.levels[:n], out.signs[:, :n] = arrays.levels[keep], arrays.signs[:, keep]
        out.size = n
        self._arrays, self._dead = out, 0
        self._slot_of_pk[:] = -1
        self._slot_of_pk[out.pks[:n]] = np.arange(n)

    # -- searching -------------------------------------------------------------

    def _depth(self, share: float, rows: int, floor: int) -> int:
        return min(rows, max(floor, math.ceil(share * rows * DEPTH_SAFETY)))

    def candidates(self, conn: apsw.Connection, sql: Statements, query_vector: bytes, k: int,
                   window: tuple[float, float] | None = None,
                   among: np.ndarray | None = None) -> list[int] | None:
        """The pks whose exact cosine decides the ``k`` nearest codes within ``window``
        (unix seconds, both ends inclusive; None: any time) and, if given, among the pks
        ``among`` (int64).

        None: this connection has uncommitted code changes, so the cache cannot answer.
        """
        with self._lock:
            if not self.refresh(conn, sql):
                return None
            arrays, thresholds = self._arrays, self._thresholds
            if arrays is None or thresholds is None or arrays.size == 0:
                return []
            n = arrays.size
            query = calibration.words(calibration.encode(np.frombuffer(query_vector, np.float32),
                                                         thresholds))[0]
            in_scope = arrays.live[:n]
            if among is not None:
                among = among[(among >= 0) & (among < len(self._slot_of_pk))]
                listed = self._slot_of_pk[among]
                in_scope = np.zeros(n, bool)
                in_scope[listed[listed >= 0]] = True
            if window is not None:
                in_scope = in_scope & (arrays.ts[:n] >= window[0]) & (arrays.ts[:n] <= window[1])
            rows = int(np.count_nonzero(in_scope))
            if rows == 0:
                return []
            # With every slot in scope (a plain recall) a slot's position is its number:
            # no list of the slots is made (about 0.1 ms at 100k).
            slots = None if rows == n else np.flatnonzero(in_scope)
            shortlist = self._depth(self._depths[1], rows, max(MIN_SHORTLIST, SHORTLIST_PER_K * k))
            shortlist = min(shortlist, MAX_SHORTLIST)
            pool = self._depth(self._depths[0], rows, max(MIN_POOL, POOL_PER_SHORTLIST * shortlist))
            if rows > self.one_stage_rows and pool < rows:
                nearest = _smallest(self._sign_distances(arrays, query, slots), pool)
                slots = nearest if slots is None else slots[nearest]
            elif slots is None:
                slots = np.arange(n)
            distances = calibration.hamming(arrays.levels[slots], query)
            chosen = slots[_smallest(distances, shortlist)]
            return np.sort(arrays.pks[chosen]).tolist()  # key order: the exact stage reads the B-tree in order

    def _sign_distances(self, arrays: _Arrays, query: np.ndarray, slots: np.ndarray | None) -> np.ndarray:
        """1-bit Hamming distances of the slots (None: every slot), one word column at a time."""
        words = arrays.signs.shape[0]
        query_signs = query[words: 2 * words]
        every_slot = slots is None
        n = arrays.size if slots is None else len(slots)
        total = np.zeros(n, np.uint16)
        scratch = np.empty(n, np.uint64)
        counts = np.empty(n, np.uint8)
        for w in range(words):
            column = arrays.signs[w, : arrays.size] if every_slot else arrays.signs[w, slots]
            np.bitwise_xor(column, query_signs[w], out=scratch)
            np.bitwise_count(scratch, out=counts)
            np.add(total, counts, out=total)
        return total

    def describe(self) -> dict[str, object]:
        """What the cache holds (for stats and tests)."""
        with self._lock:
            arrays = self._arrays
            return {"codes": int((self._slot_of_pk >= 0).sum()), "slots": arrays.size if arrays else 0,
                    "generation": self._generation, "seq": self._seq,
                    "depth_1bit": self._depths[0], "depth_3bit": self._depths[1],
                    "bytes": 0 if arrays is None else int(arrays.levels.nbytes + arrays.signs.nbytes
                                                          + arrays.pks.nbytes + arrays.ts.nbytes)}
