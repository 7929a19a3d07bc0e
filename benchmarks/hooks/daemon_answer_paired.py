"""Two trees' warm processes answering the same prompt hooks, taking turns (issue 44).

daemon_latency.py times one tree's clients as whole processes; most of a warm hook's wall time
there is the client process's own start, which a change to recall does not touch. This starts
one warm process per tree (``localmem --db COPY daemon start``, that tree's code on PYTHONPATH
and as the working folder), each on its own copy of scale.py's cached 10k store (relabelled to
the default model, as daemon_latency.py does), then asks both the same prompt hook, one after
the other, taking turns at going first, and reports each one's own time (``took_ms``: the
prompt hook's two recalls and the answer) and the round trip seen from here, with the median
over prompts of after ÷ before. Every file is in a temporary folder. ``--after-env KEY=VALUE``
(repeatable) sets a variable in AFTER's warm process only: one tree against itself with a
setting changed (the same tree given twice).

    python benchmarks/hooks/daemon_answer_paired.py BEFORE_TREE AFTER_TREE [--runs 40] [--gap 0.05]
        [--prompts workload|content-free] [--after-env KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for entry in (str(ROOT), str(HERE), str(ROOT / "tests")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from benchmarks.hooks.cold_start import MODEL, ensure_export, environment  # noqa: E402
from benchmarks.hooks.daemon_latency import say, wait_warm  # noqa: E402
from benchmarks.hooks.first_answer import relabel  # noqa: E402


def daemon(tree: Path, env: dict[str, str], db: Path, action: str) -> None:
    """``localmem --db DB daemon ACTION`` with ``tree``'s code."""
    subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "daemon", action], env=env, cwd=str(tree),
                   capture_output=True, check=action == "start")


def ask(db: Path, text: str, number: int) -> tuple[float, float]:
    """(the warm process's own time, the round trip from here) for one prompt hook, in seconds."""
    from localmem.daemon import client

    timing: dict[str, float] = {}
    payload = {"session_id": f"paired-{number}", "prompt": text, "cwd": "/", "hook_event_name": "UserPromptSubmit"}
    started = time.perf_counter()
    client.ask(str(db), "hook", {"event": "UserPromptSubmit", "payload": payload, "settings": {}},
               deadline=time.monotonic() + 60, timing=timing)
    return timing["took_ms"] / 1000, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--runs", type=int, default=40, help="prompts asked of both (default 40)")
    parser.add_argument("--gap", type=float, default=0.05, help="seconds of quiet before each ask")
    parser.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "localmem-bench-cache"))
    parser.add_argument("--prompts", choices=("workload", "content-free"), default="workload",
                        help="what is asked: scale.py's workload queries (default), or the content-free prompts of "
                             "tests/content_free_prompts.py in turn (the hook answers those without recall)")
    parser.add_argument("--after-env", action="append", default=[], metavar="KEY=VALUE",
                        help="an environment variable for AFTER's warm process only (repeatable)")
    args = parser.parse_args()
    extra = {}
    for pair in args.after_env:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            parser.error(f"--after-env wants KEY=VALUE, got {pair!r}")
        extra[key.strip()] = value
    from benchmarks.speed import scale
    from localmem import Config, MemoryStore

    cache = Path(args.cache_dir)
    env = environment(cache)
    env["LOCALMEM_TRACK_ACCESS"] = "0"
    ensure_export(cache, env, say)
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    with tempfile.TemporaryDirectory(prefix="lmd-paired-", dir="/tmp") as tmp:
        folder = Path(tmp)
        (folder / "run").mkdir(mode=0o700)
        env["XDG_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"] = str(folder / "run")  # ask() finds them here
        source, _ = scale.cached(10_000, False, say)
        dbs = {}
        for name in trees:
            dbs[name] = folder / f"{name}.db"
            shutil.copyfile(source, dbs[name])
            relabel(dbs[name], MODEL)
        with MemoryStore(str(dbs["before"]), embedder="hash", config=Config(track_access=False)) as store:
            texts = [kwargs["query"] for _mode, kwargs, _vector in scale.workload(store, args.runs + 10)]
        if args.prompts == "content-free":
            from tests.content_free_prompts import CONTENT_FREE

            texts = [CONTENT_FREE[i % len(CONTENT_FREE)] for i in range(args.runs + 10)]
        envs = {name: dict(env, PYTHONPATH=str(tree)) for name, tree in trees.items()}
        envs["after"].update(extra)
        try:
            for name, tree in trees.items():
                started = time.perf_counter()
                daemon(tree, envs[name], dbs[name], "start")
                wait_warm(envs[name], dbs[name], started)
                for index in range(5):  # its first answers load the model's sessions and the caches
                    ask(dbs[name], texts[-1 - index], index)
            took: dict[str, list[float]] = {name: [] for name in trees}
            trip: dict[str, list[float]] = {name: [] for name in trees}
            for index in range(args.runs):
                order = list(trees) if index % 2 == 0 else list(trees)[::-1]
                for name in order:
                    time.sleep(args.gap)
                    own, whole = ask(dbs[name], texts[index], 100 + index)
                    took[name].append(own * 1000)
                    trip[name].append(whole * 1000)
        finally:
            for name, tree in trees.items():
                daemon(tree, envs[name], dbs[name], "stop")
    print(f"{args.runs} prompt hooks asked of both warm processes, 10k memories, real model, "
          f"{args.gap} s before each; load average {os.getloadavg()[0]:.1f}"
          + (f"; after with {' '.join(args.after_env)}" if args.after_env else "")
          + ("; the content-free probe prompts" if args.prompts == "content-free" else ""))
    print("| measure | before p50 | after p50 | before mean | after mean | median after ÷ before |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, values in (("the warm process's own time (took_ms)", took), ("round trip from here", trip)):
        ratios = [a / b for a, b in zip(values["after"], values["before"]) if b > 0]
        print(f"| {label} | {statistics.median(values['before']):.2f} | {statistics.median(values['after']):.2f} | "
              f"{statistics.fmean(values['before']):.2f} | {statistics.fmean(values['after']):.2f} | "
              f"{statistics.median(ratios):.3f} |")


if __name__ == "__main__":
    main()
