"""Recall's token product made whole, against the same product made in parts that stay in the cache.

``storage/token_codes.similarities`` unpacks every candidate's token bits into one float32 matrix
(~7 MB for a pool of 5,000 tokens) and multiplies it by the query's tokens. This script makes the
same product in parts of equal size written into one reused buffer (branch warm8's candidate
7a9e67f, reverted: docs/results/history.md, "the token product in parts the cache holds"), on random
pools of recall's shape, the two ways in turn, and reports the time of each and how many products
differ in any bit. Parts are at least ``--split-cells`` (stored tokens x query tokens x dimensions):
OpenBLAS multiplies smaller matrices with other kernels whose sums can differ in the last bit.

    python benchmarks/speed/token_product_parts.py [--pools 200] [--part-tokens 512] [--split-cells 4194304]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import numpy as np  # noqa: E402

from localmem.storage.blas import one_blas_thread  # noqa: E402
from localmem.storage.token_codes import similarities  # noqa: E402

DIMS = 384
WIDTH = DIMS // 8


def in_parts(query: np.ndarray, tokens: int, codes: bytes, size: int) -> np.ndarray:
    """``similarities`` with the product made ``size`` stored tokens at a time (the last part
    ends at the last token); pools under two parts and one-token queries whole, as there."""
    packed = np.frombuffer(codes, np.uint8).reshape(tokens, WIDTH)
    query = query.astype(np.float32, copy=False)
    if tokens < 2 * size or query.shape[0] < 2:
        return similarities(query, tokens, codes, DIMS)
    out = np.empty((tokens, query.shape[0]), np.float32)
    part = np.empty((size, DIMS), np.float32)
    with one_blas_thread():
        for start in [*range(0, tokens - size, size), tokens - size]:
            np.copyto(part, np.unpackbits(packed[start:start + size], axis=1, bitorder="little")[:, :DIMS],
                      casting="unsafe")
            np.matmul(part, query.T, out=out[start:start + size])
    return 2.0 * np.ascontiguousarray(out.T) - query.sum(axis=1, keepdims=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=200, help="random pools, each made both ways in turn")
    parser.add_argument("--part-tokens", type=int, default=512, help="stored tokens per part, at least")
    parser.add_argument("--split-cells", type=int, default=1 << 22,
                        help="a part's stored tokens x query tokens x dimensions, at least")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for name in ("pools", "part_tokens", "split_cells"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    rng = np.random.default_rng(args.seed)
    times: dict[str, list[float]] = {"whole": [], "parts": []}
    differ = split = 0
    for index in range(args.pools):
        tokens, query_tokens = int(rng.integers(3500, 6500)), int(rng.integers(8, 18))  # recall's ~136 candidates
        codes = rng.integers(0, 256, tokens * WIDTH, dtype=np.uint8).tobytes()
        query = (rng.standard_normal((query_tokens, DIMS)) / DIMS).astype(np.float32)
        size = max(args.part_tokens, -(-args.split_cells // (query_tokens * DIMS)))
        split += tokens >= 2 * size
        found = {}
        for way in ("whole", "parts") if index % 2 else ("parts", "whole"):
            started = time.perf_counter()
            found[way] = (similarities(query, tokens, codes, DIMS) if way == "whole"
                          else in_parts(query, tokens, codes, size))
            times[way].append((time.perf_counter() - started) * 1000)
        differ += found["whole"].tobytes() != found["parts"].tobytes()
    print(f"{args.pools} pools of 3,500-6,500 stored tokens and 8-17 query tokens ({split} split), "
          f"parts of at least {args.part_tokens} tokens and {args.split_cells:,} cells; "
          f"products differing in any bit: {differ}")
    print("| way | p50 ms | mean ms | median ÷ whole |")
    print("|---|---:|---:|---:|")
    for way, values in times.items():
        ratio = statistics.median(b / a for a, b in zip(times["whole"], values))
        print(f"| {way} | {statistics.median(values):.3f} | {statistics.fmean(values):.3f} | {ratio:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
