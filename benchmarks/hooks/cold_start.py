"""Cold-start benchmark: a new process answering one recall, sentence-transformers vs ONNX.

Every timed case is a fresh ``python`` process, run ``--runs`` times (after
``--warmup`` discarded runs) with the cases interleaved round-robin, so a noisy
spell on the shared machine hits each case alike (hyperfine-style: wall time
of the whole process, min / median / mean ± sd):

* ``python -c pass``                      -- the interpreter's own start;
* CLI recall, ``--embedder none``          -- the CLI without any embedding (keyword only);
* CLI recall, ``--embedder st:MODEL``      -- the reference path: imports sentence-transformers;
* CLI recall, default embedder             -- the database's recorded model, which resolves to
  the ONNX embedder because an export is cached (checked: no torch in that process);
* embedding only, sentence-transformers   -- start + import + model load + one query embedding;
* embedding only, ONNX                    -- the same through ``OnnxEmbedder``.

Setup (not timed): the model is exported once into a private cache
(``benchmarks/.cache/cold-start/``, or ``--cache-dir``), a small database of
``--memories`` synthetic memories (the ingest benchmark's generator) is built
with sentence-transformers vectors, and the two recall paths are checked to
return the same memories with query embeddings at cosine >= 0.999. A last
pass breaks the cold path into phases inside one process (median of
``--runs``). Results are printed and written into ``docs/results/history.md``
between ``<!-- cold-start:start -->`` / ``<!-- cold-start:end -->``.

    python benchmarks/hooks/cold_start.py [--runs 5] [--warmup 1] [--memories 500] [--no-write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for entry in (str(ROOT), str(HERE)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from benchmarks.speed.ingest import generate_memories, nproc  # noqa: E402
from benchmarks.common.results_file import RESULTS, git_revision, write_section  # noqa: E402

MODEL = "all-MiniLM-L6-v2"
QUERY = "what did we decide about the database migration?"
PARITY_QUERIES = (
    QUERY,
    "who prefers dark mode",
    "bug in the payment service last week",
    "",
    "Réunion budget Q3 — décisions ?",
)

EMBED_ST = (
    "from localmem.embedders import SentenceTransformerEmbedder as E; "
    f"v = E({MODEL!r}).embed([{QUERY!r}]); assert len(v[0]) == 384"
)
EMBED_ONNX = (
    "from localmem.embedders import OnnxEmbedder as E; "
    f"v = E({MODEL!r}).embed([{QUERY!r}]); assert len(v[0]) == 384"
)
ONNX_PROBE = """
import json, sys
from localmem.cli import main
code = main(sys.argv[1:])
heavy = [m for m in ("torch", "sentence_transformers", "transformers") if m in sys.modules]
sys.stderr.write(json.dumps({"code": code, "heavy": heavy, "onnxruntime": "onnxruntime" in sys.modules}) + "\\n")
"""
PHASES_ONNX = """
import json, sys, time
t = [time.perf_counter()]
import numpy, onnxruntime, tokenizers
t.append(time.perf_counter())
from localmem.embedders import OnnxEmbedder
e = OnnxEmbedder(sys.argv[1])
e.load()
t.append(time.perf_counter())
e.embed([sys.argv[2]])
t.append(time.perf_counter())
e.embed([sys.argv[2]])
t.append(time.perf_counter())
print(json.dumps({"import numpy+onnxruntime+tokenizers": t[1] - t[0], "tokenizer + ONNX session load": t[2] - t[1],
                  "first query embedding": t[3] - t[2], "second query embedding": t[4] - t[3]}))
"""
PHASES_ST = """
import json, sys, time
t = [time.perf_counter()]
import sentence_transformers
t.append(time.perf_counter())
from localmem.embedders import SentenceTransformerEmbedder
e = SentenceTransformerEmbedder(sys.argv[1])
e.load()
t.append(time.perf_counter())
e.embed([sys.argv[2]])
t.append(time.perf_counter())
e.embed([sys.argv[2]])
t.append(time.perf_counter())
print(json.dumps({"import sentence_transformers (torch, transformers, ...)": t[1] - t[0], "model load": t[2] - t[1],
                  "first query embedding": t[3] - t[2], "second query embedding": t[4] - t[3]}))
"""


def environment(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL", "LOCALMEM_ONNX"):
        env.pop(name, None)
    env.update(
        LOCALMEM_CACHE_DIR=str(cache),
        LOCALMEM_ONNX_EXPORT="0",  # the ST runs must not export during the timing (it is cached anyway)
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        TOKENIZERS_PARALLELISM="false",
        PYTHONPATH=os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])),
    )
    return env


def run(argv: list[str], env: dict[str, str], *, check: bool = True) -> tuple[float, subprocess.CompletedProcess[str]]:
    started = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(ROOT), check=False)
    elapsed = time.perf_counter() - started
    if check and completed.returncode != 0:
        raise SystemExit(f"command failed ({completed.returncode}): {shlex.join(argv)}\n{completed.stderr}")
    return elapsed, completed


def ensure_export(cache: Path, env: dict[str, str], say) -> dict[str, Any]:
    from localmem.embedders.onnx_cache import find_export

    os.environ["LOCALMEM_CACHE_DIR"] = str(cache)
    existing = find_export(MODEL)
    if existing is not None:
        meta = json.loads((existing / "export.json").read_text())
        say(f"ONNX export cached at {existing}")
        return {"status": "cached", "path": str(existing), "meta": meta, "wall": None}
    say("exporting the model to ONNX (once)...")
    wall, completed = run([sys.executable, "-m", "localmem", "--json", "embedder", "export", MODEL], env)
    report = json.loads(completed.stdout)
    path = Path(report["path"])
    meta = json.loads((path / "export.json").read_text())
    say(f"exported in {wall:.1f} s wall (process start, torch import, model load, export, check)")
    return {"status": "exported", "path": str(path), "meta": meta, "wall": wall}


def build_db(path: Path, count: int, say) -> float:
    from localmem.store import MemoryStore

    if path.exists():
        path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    items = generate_memories(count)
    say(f"building a {count}-memory database with sentence-transformers vectors...")
    started = time.perf_counter()
    with MemoryStore(str(path), embedder=f"st:{MODEL}") as store:
        store.store_many(items)
    return time.perf_counter() - started


def parity(db: Path, env: dict[str, str], say) -> dict[str, Any]:
    """Same memories from both CLI paths, and query embeddings at cosine >= 0.999."""
    import numpy as np

    from localmem.embedders import SentenceTransformerEmbedder
    from localmem.embedders import OnnxEmbedder

    reference = SentenceTransformerEmbedder(MODEL).embed(list(PARITY_QUERIES))
    fast = OnnxEmbedder(MODEL).embed(list(PARITY_QUERIES))
    cosines = [float(np.dot(a, b)) for a, b in zip(reference, fast)]
    base = [sys.executable, "-m", "localmem", "--db", str(db), "--json"]
    _, st_run = run(base + ["--embedder", f"st:{MODEL}", "recall", QUERY, "--limit", "10"], env)
    _, probe = run([sys.executable, "-c", ONNX_PROBE, "--db", str(db), "--json", "recall", QUERY, "--limit", "10"],
                   env)
    facts = json.loads(probe.stderr.strip().splitlines()[-1])
    if facts["heavy"] or not facts["onnxruntime"] or facts["code"] != 0:
        raise SystemExit(f"the default CLI path did not run on ONNX without torch: {facts}")

    def ids(text: str) -> list[str]:
        response = json.loads(text)
        if response.get("degraded"):
            raise SystemExit(f"degraded recall: {response.get('degraded')}")
        return [r["memory"]["id"] for r in response["results"]]

    st_ids, onnx_ids = ids(st_run.stdout), ids(probe.stdout)
    say(f"parity: min cosine {min(cosines):.7f}; top-10 identical: {st_ids == onnx_ids}")
    return {"min_cosine": min(cosines), "same_results": st_ids == onnx_ids, "results": len(st_ids),
            "overlap": len(set(st_ids) & set(onnx_ids))}


def phases(script: str, env: dict[str, str], runs: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {}
    for _ in range(runs):
        _, completed = run([sys.executable, "-c", script, MODEL, QUERY], env)
        for name, value in json.loads(completed.stdout.strip().splitlines()[-1]).items():
            samples.setdefault(name, []).append(value)
    return {name: statistics.median(values) for name, values in samples.items()}


def stats(values: list[float]) -> dict[str, float]:
    return {
        "min": min(values),
        "median": statistics.median(values),
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
    }


def versions() -> str:
    import importlib.metadata

    parts = [f"Python {platform.python_version()}"]
    for dist in ("torch", "sentence-transformers", "transformers", "onnxruntime", "tokenizers", "onnx", "numpy"):
        try:
            parts.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist} missing")
    return ", ".join(parts)


def write_results(section: str) -> None:
    write_section("cold-start", section)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="timed runs per case (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="discarded runs per case first (default 1)")
    parser.add_argument("--memories", type=int, default=500, help="memories in the small database (default 500)")
    parser.add_argument("--cache-dir", type=Path, default=ROOT / "benchmarks" / ".cache" / "cold-start",
                        help="ONNX cache for the run (default benchmarks/.cache/cold-start)")
    parser.add_argument("--big-db", type=Path, default=None,
                        help="also time cold CLI recalls on a copy of this (large) database file")
    parser.add_argument("--no-write", action="store_true", help="print only; leave docs/results/history.md alone")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ["LOCALMEM_ONNX_EXPORT"] = "0"
    begun = time.perf_counter()
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    cache = args.cache_dir.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    env = environment(cache)
    export = ensure_export(cache, env, say)
    db = cache / "small.db"
    build_seconds = build_db(db, args.memories, say)
    check = parity(db, env, say)

    py = sys.executable
    cli = [py, "-m", "localmem", "--db", str(db)]
    q = shlex.quote(QUERY)
    cases = [
        ("python -c pass (interpreter start)", [py, "-c", "pass"], "python -c pass"),
        ("CLI recall, `--embedder none` (no embedding)", cli + ["--embedder", "none", "recall", QUERY],
         f"python -m localmem --db small.db --embedder none recall {q}"),
        ("CLI recall, sentence-transformers", cli + ["--embedder", f"st:{MODEL}", "recall", QUERY],
         f"python -m localmem --db small.db --embedder st:{MODEL} recall {q}"),
        ("CLI recall, default embedder (resolves to ONNX)", cli + ["recall", QUERY],
         f"python -m localmem --db small.db recall {q}"),
        ("embedding only, sentence-transformers", [py, "-c", EMBED_ST],
         f"python -c \"SentenceTransformerEmbedder('{MODEL}').embed([QUERY])\""),
        ("embedding only, ONNX", [py, "-c", EMBED_ONNX],
         f"python -c \"OnnxEmbedder('{MODEL}').embed([QUERY])\""),
    ]
    big_env = dict(env, LOCALMEM_TRACK_ACCESS="0")
    big_copy = cache / "big-copy.db"
    if args.big_db is not None:
        say(f"copying {args.big_db} (the copy is opened, never the original)...")
        shutil.copyfile(args.big_db, big_copy)
        big = [py, "-m", "localmem", "--db", str(big_copy)]
        cases += [
            ("big file: CLI recall, `--embedder none`", big + ["--embedder", "none", "recall", QUERY],
             f"python -m localmem --db {args.big_db.name} --embedder none recall {q}"),
            ("big file: CLI recall, ONNX", big + ["--embedder", f"onnx:{MODEL}", "recall", QUERY],
             f"python -m localmem --db {args.big_db.name} --embedder onnx:{MODEL} recall {q}"),
        ]
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    try:
        for round_index in range(args.warmup + args.runs):
            order = cases[round_index % len(cases):] + cases[:round_index % len(cases)]
            for name, argv_, _ in order:
                elapsed, _ = run(argv_, big_env if name.startswith("big file") else env)
                if round_index >= args.warmup:
                    times[name].append(elapsed)
            say(f"round {round_index + 1}/{args.warmup + args.runs} done")
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(str(big_copy) + suffix).unlink(missing_ok=True)
    say("phase breakdown...")
    onnx_phases = phases(PHASES_ONNX, env, args.runs)
    st_phases = phases(PHASES_ST, env, args.runs)

    summary = {name: stats(values) for name, values in times.items()}
    names = [name for name, _, _ in cases]
    st_cli, onnx_cli = summary[names[2]]["median"], summary[names[3]]["median"]
    st_embed, onnx_embed = summary[names[4]]["median"], summary[names[5]]["median"]
    floor_cli = summary[names[1]]["median"]

    lines = [
        "## Cold start: one recall in a new process",
        "",
        "Command: `cd /work/main && /work/venv/bin/python benchmarks/hooks/cold_start.py"
        + (f" {shlex.join(sys.argv[1:] if argv is None else argv)}" if (sys.argv[1:] if argv is None else argv)
           else "") + "`  ",
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
        f"Environment: {versions()}; localmem git {git_revision()}; `nproc` = {nproc()}; {platform.platform()}  ",
        f"Total run time: {time.perf_counter() - begun:.0f} s; 1-minute load average {load_before:.1f} at the "
        f"start, {os.getloadavg()[0] if hasattr(os, 'getloadavg') else float('nan'):.1f} at the end "
        "(other work shares the machine: the min column is the least disturbed run)",
        "",
        f"Each case is a new `python` process (wall time of the whole process, stdout captured), "
        f"{args.runs} timed runs after {args.warmup} discarded, the cases interleaved round-robin. "
        f"Database: {args.memories} synthetic memories (the ingest benchmark's generator) embedded with "
        f"sentence-transformers all-MiniLM-L6-v2, built in {build_seconds:.1f} s (not timed). "
        f"Query: `{QUERY}`.",
        "",
        "| case | min s | median s | mean ± sd s | median ÷ ST path | command |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for index, (name, _, shown) in enumerate(cases):
        s = summary[name]
        reference = st_embed if name.startswith("embedding") else st_cli
        ratio = f"{s['median'] / reference:.3f}" if index >= 2 and not name.startswith("big") else ""
        lines.append(f"| {name} | {s['min']:.3f} | {s['median']:.3f} | {s['mean']:.3f} ± {s['sd']:.3f} | "
                     f"{ratio} | `{shown}` |")
    lines += [
        "",
        f"- **CLI recall: ONNX {onnx_cli:.2f} s against sentence-transformers {st_cli:.2f} s "
        f"({st_cli / onnx_cli:.1f}× faster)**; the embedding adds {onnx_cli - floor_cli:.2f} s over the "
        f"same CLI with no embedder ({floor_cli:.2f} s), against {st_cli - floor_cli:.2f} s for sentence-transformers.",
        f"- Embedding only (start + import + model load + one query): ONNX {onnx_embed:.2f} s against "
        f"sentence-transformers {st_embed:.2f} s ({st_embed / onnx_embed:.1f}× faster).",
        f"- Parity: query embeddings of {len(PARITY_QUERIES)} queries (one empty, one non-English) at min cosine "
        f"{check['min_cosine']:.7f} to sentence-transformers; the two CLI paths returned "
        + ("the same top-10 in the same order" if check["same_results"]
           else f"{check['overlap']} of {check['results']} results in common")
        + "; the default CLI path was checked to run on onnxruntime with neither torch nor "
        "sentence-transformers imported.",
    ]
    meta = export["meta"]
    when = (f"exported by this run in {export['wall']:.1f} s wall" if export["wall"] is not None
            else "already cached")
    lines += [
        f"- One-time export ({when}): {meta['onnx_bytes'] / 1e6:.1f} MB ONNX graph + "
        f"{meta.get('data_bytes', 0) / 1e6:.1f} MB weights file, "
        f"{meta['export_seconds']:.1f} s for torch.onnx export + sentence-transformers load inside the export, "
        f"checked at min cosine {meta['verify_min_cosine']:.7f} on {meta['verify_texts']} texts.",
        "",
        "Phases inside one cold process (median of "
        f"{args.runs}; the interpreter start and `import localmem` come on top):",
        "",
        "| ONNX path | s | sentence-transformers path | s |",
        "|---|---:|---|---:|",
    ]
    for (a, av), (b, bv) in zip(onnx_phases.items(), st_phases.items()):
        lines.append(f"| {a} | {av:.3f} | {b} | {bv:.3f} |")
    if args.big_db is not None:
        big_none, big_onnx = summary[names[6]]["median"], summary[names[7]]["median"]
        lines += [
            "",
            f"Big file: a copy of `{args.big_db}` ({args.big_db.stat().st_size / 1e6:.0f} MB; "
            "its vectors are not MiniLM's, so this times the work, not the ranking), opened with "
            f"`LOCALMEM_TRACK_ACCESS=0`: cold CLI recall through ONNX {big_onnx:.2f} s median "
            f"(min {summary[names[7]]['min']:.2f} s), {big_none:.2f} s without an embedder.",
        ]
    lines += [
        "",
        "The 100k-memory cold CLI target (≤ 1.0 s) is the ONNX cold path measured here plus the recall itself "
        "at that scale on a cold process; the recall latency is the scale benchmark's subject.",
    ]
    section = "\n".join(lines)
    print(section)
    if not args.no_write:
        write_results(section)
        say(f"wrote {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
