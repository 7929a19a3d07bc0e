"""The vector channel's candidates: the 3-bit code scan (as shipped) against an exact float32
matrix product over the scope's vectors, on small_store.py's text requests.

Each request is recalled twice in turn, once with each way of choosing which memories get
an exact cosine in SQL (vector_knn.sql, unchanged: the distances are sqlite-vec's either
way); the exact way passes the ``k`` + ``--margin`` nearest by numpy's product, so a last-bit
difference between numpy's and sqlite-vec's cosine cannot change the ``k`` kept. It reports
the choosing step's time and the whole vector query's (choice and SQL), p50 per way, and how
many of the channel's lists differ (ids or order) and from which rank: where the code scan's
shortlist missed a nearer memory. A probe for issue 44 item 3 (docs/results/history.md,
warm5), not a shipped path; the matrix is read once, as a long-lived store would keep it.

    python benchmarks/speed/vector_exact.py --store FILE [--every 2] [--margin 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from benchmarks.speed import small_store  # noqa: E402
from localmem import Config  # noqa: E402
from localmem.recall import channels  # noqa: E402
from localmem.storage import code_search  # noqa: E402


class ExactChoice:
    """The scope's ``k`` + ``margin`` nearest pks by one float32 product with every vector."""

    def __init__(self, backend: Any, margin: int) -> None:
        rows = list(backend.conn.execute("SELECT pk, embedding FROM memory_embeddings ORDER BY pk"))
        self.pks = np.array([pk for pk, _ in rows], np.int64)
        # The time the code scan filters a window on, by pk (vector_codes_since.sql, from the start).
        times = dict((pk, ts) for pk, ts, _ in backend.conn.execute(backend.sql["vector_codes_since"], {"seq": -1}))
        self.ts = np.array([times[pk] for pk in self.pks], np.float64)
        matrix = np.frombuffer(b"".join(blob for _, blob in rows), np.float32).reshape(len(rows), -1)
        self.matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        self.margin = margin

    def __call__(self, query_vector: bytes, k: int, window: Any, among: np.ndarray | None) -> list[int]:
        query = np.frombuffer(query_vector, np.float32)
        similarity = self.matrix @ (query / np.linalg.norm(query))
        keep = np.ones(len(self.pks), bool) if among is None else np.isin(self.pks, among)
        if window is not None:  # both ends inclusive, as the code scan's
            keep &= (self.ts >= window[0]) & (self.ts <= window[1])
        similarity, pks = similarity[keep], self.pks[keep]
        want = min(len(pks), k + self.margin)
        if want == 0:
            return []
        top = np.argpartition(-similarity, want - 1)[:want]
        return np.sort(pks[top]).tolist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    small_store.add_warm_text_arguments(parser, every=2)
    parser.add_argument("--margin", type=int, default=8)
    args = parser.parse_args(argv)
    store, work, scratch = small_store.warm_text_requests(args.data, args.embedder, args.store, Config(),
                                                          args.every)
    exact = ExactChoice(store.backend, args.margin)
    coded = code_search.CodeIndex.candidates
    way = {"now": "code"}
    choose_ms: dict[str, list[float]] = {"code": [], "exact": []}
    query_ms: dict[str, list[float]] = {"code": [], "exact": []}
    lists: dict[str, list[list[str]]] = {"code": [], "exact": []}

    def candidates(self: Any, conn: Any, sql: Any, query_vector: bytes, k: int,
                   window: Any = None, among: Any = None) -> list[int] | None:
        started = time.perf_counter()
        found = (coded(self, conn, sql, query_vector, k, window, among) if way["now"] == "code"
                 else exact(query_vector, k, window, among))
        choose_ms[way["now"]].append((time.perf_counter() - started) * 1000)
        return found

    knn_rows = channels._knn_rows

    def timed_knn_rows(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        started = time.perf_counter()
        rows = knn_rows(*args, **kwargs)
        query_ms[way["now"]].append((time.perf_counter() - started) * 1000)
        lists[way["now"]].append([row["id"] for row in rows])
        return rows

    code_search.CodeIndex.candidates = candidates  # type: ignore[method-assign]
    channels._knn_rows = timed_knn_rows
    try:
        for query, kwargs in work:
            for name in ("code", "exact"):
                way["now"] = name
                store.recall(query, **kwargs)
    finally:
        code_search.CodeIndex.candidates = coded  # type: ignore[method-assign]
        channels._knn_rows = knn_rows
    first_differing = [next((i for i, (a, b) in enumerate(zip(c, e)) if a != b), min(len(c), len(e)))
                       for c, e in zip(lists["code"], lists["exact"]) if c != e]
    print(f"{store.health()['memory_count']} memories, {len(work)} text requests (every {args.every}th), "
          f"exact margin {args.margin}; ms p50, each way in turn per request")
    for name in ("code", "exact"):
        print(f"{name:>5}: choosing {statistics.median(choose_ms[name]):.3f}, "
              f"whole vector query {statistics.median(query_ms[name]):.3f} ({len(query_ms[name])} queries)")
    print(f"channel lists differing: {len(first_differing)} of {len(lists['code'])}"
          + (f"; first differing rank median {statistics.median(first_differing)}, min {min(first_differing)}, "
             f"within the first 20: {sum(rank < 20 for rank in first_differing)}" if first_differing else ""))
    store.close()
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
