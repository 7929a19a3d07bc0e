"""MaxSim's product over stored token codes: from the bits against a decoded ±1 matrix.

``token_codes.similarities`` computes ``query @ signs.T`` as ``2 q·b − Σq`` from the
unpacked bits; before, recall decoded the codes to a float ±1 matrix first
(``token_codes.decode``) and multiplied that. Both are run alternating on the codes of
recall-sized candidate pools (90 and 140 memories, token_evidence.py's 100k store) with a
query of 12 centred tokens, and checked to agree.

    python experiments/maxsim_kernel.py [--repeat 300] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.speed import token_evidence  # noqa: E402
from localmem import Config, MemoryStore  # noqa: E402
from localmem.storage.token_codes import decode, similarities  # noqa: E402
from benchmarks.common.results_file import write_section  # noqa: E402

DIMS = 384


def measure(blob: bytes, tokens: int, query: np.ndarray, repeat: int) -> dict[str, float]:
    def decoded() -> np.ndarray:
        return query @ decode(tokens, blob, DIMS).T

    def from_bits() -> np.ndarray:
        return similarities(query, tokens, blob, DIMS)

    assert np.allclose(decoded(), from_bits(), atol=1e-5)
    times: dict[str, list[float]] = {"decoded": [], "bits": []}
    for index in range(repeat):
        pair = [("decoded", decoded), ("bits", from_bits)]
        for name, run in pair if index % 2 else pair[::-1]:
            started = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=300)
    parser.add_argument("--write", action="store_true", help="write the table to RESULTS.md")
    args = parser.parse_args(argv)
    path = token_evidence.with_token_codes(100_000, print)
    store = MemoryStore(path, embedder="none", config=Config.from_env({"LOCALMEM_TRACK_ACCESS": "0"}),
                        read_only=True)
    rng = np.random.default_rng(0)
    query = rng.standard_normal((12, DIMS)).astype(np.float32)
    query /= np.abs(query).sum(axis=1, keepdims=True)
    lines = ["## MaxSim's product: from the code bits against a decoded sign matrix", "",
             f"Command: `python experiments/maxsim_kernel.py --write` ({args.repeat} alternating calls each), "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; 2 cores, shared. A 12-token query "
             "against the codes of consecutive memories of token_evidence.py's 100k store.", "",
             "| candidates | tokens | decoded ±1 matrix ms | from the bits ms | ratio |",
             "|---:|---:|---:|---:|---:|"]
    for count in (90, 140):
        rows = store.conn.execute("SELECT tokens, codes FROM token_codes ORDER BY pk LIMIT ? OFFSET 7000",
                                  (count,)).fetchall()
        tokens = sum(r[0] for r in rows)
        got = measure(b"".join(r[1] for r in rows), tokens, query, args.repeat)
        lines.append(f"| {count} | {tokens} | {got['decoded']:.2f} | {got['bits']:.2f} | "
                     f"{got['decoded'] / got['bits']:.1f}× |")
    store.close()
    print("\n".join(lines))
    if args.write:
        write_section("maxsim-kernel", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
