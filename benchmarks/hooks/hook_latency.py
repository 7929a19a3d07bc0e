"""How long ``localmem hook UserPromptSubmit`` takes as a new process, with and without a server.

Issue 34's targets: p50 ≤ 150 ms when a ``localmem serve`` runs for the store (the hook finds
its discovery note and forwards), ≤ 0.6 s cold (no server: the hook opens the store and answers
in-process).

The store is the five LoCoMo dev conversations (~2,760 turns, one memory each); each hook run
gets one LoCoMo question as its prompt, in a new session (so the injection ledger never
suppresses an answer), with the default hook settings and ``--deadline 60`` (so a slow answer
is timed, not cut off at the default 2 s). The runs alternate, pair by pair:
``server`` (the note present) then ``cold`` (the same store, another runtime folder: no note),
the order flipped every other pair. Also timed in each round, to split the forwarded figure:
the forwarded hook with injection off (``LOCALMEM_HOOK_INJECT=0``: process start, the client,
the round trip, no recall), the route alone from this process (the server's share), and
``python -c pass`` (the floor of any new process), and, as the reference issue 32 measured on a
quiet machine, ``localmem recall QUESTION`` as a new process without a server.
Every process is the ``localmem`` console script when it runs this tree (else ``python -m
localmem``), with Python's bytecode cache (``PYTHONDONTWRITEBYTECODE`` removed). Every file is
in a temporary folder.

    python benchmarks/hooks/hook_latency.py [--runs 30] [--embedder hash|onnx] [--data LOCOMO.json]
        [--keep-store PATH] [--write]

``--embedder onnx`` uses the real model through the ONNX embedder (exported once into
``--cache-dir``, as cold_start.py does); building the store then embeds every turn (~1 min).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for entry in (str(ROOT), str(HERE), str(ROOT / "tests")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from benchmarks.quality.locomo import DEFAULT_DATA, memory_item, turns_of  # noqa: E402
from benchmarks.common.results_file import git_revision, write_section  # noqa: E402
from serving import stop, wait_until_healthy  # noqa: E402  (tests/serving.py)

MODEL = "all-MiniLM-L6-v2"
SECTION = "hook-latency"


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def child_env(tmp: Path, cache: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOCALMEM_", "XDG_")) and k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", HF_HUB_DISABLE_PROGRESS_BARS="1",
               TOKENIZERS_PARALLELISM="false", XDG_CONFIG_HOME=str(tmp / "config"),
               LOCALMEM_TRACK_ACCESS="0")
    if cache is not None:
        env["LOCALMEM_CACHE_DIR"] = str(cache)
    return env


def program(env: dict[str, str]) -> list[str]:
    """The console script when it imports this tree, else ``python -m localmem``."""
    script = Path(sys.executable).with_name("localmem")
    if script.exists():
        where = subprocess.run([sys.executable, "-c", "import localmem; print(localmem.__file__)"],
                               env=env, capture_output=True, text=True).stdout.strip()
        if where.startswith(str(ROOT)):
            return [str(script)]
    return [sys.executable, "-m", "localmem"]


def build_store(path: Path, embedder: str, source: Path) -> tuple[int, list[str]]:
    from localmem import MemoryStore

    data = json.loads(source.read_text())
    items, questions = [], []
    for index, sample in enumerate(data):
        items += [memory_item(turn, index) for turn in turns_of(sample)]
        questions += [qa["question"] for qa in sample["qa"] if qa.get("question")]
    with MemoryStore(str(path), embedder=embedder) as store:
        store.store_many(items)
    return len(items), questions


def store_size(path: Path, source: Path) -> tuple[int, list[str]]:
    from localmem import MemoryStore

    data = json.loads(source.read_text())
    questions = [qa["question"] for sample in data for qa in sample["qa"] if qa.get("question")]
    with MemoryStore(str(path)) as store:
        return store.health()["memory_count"], questions


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


CPU: dict[str, list[float]] = {}  # mode -> the new process's own CPU seconds (user + system)


def timed(argv: list[str], env: dict[str, str], stdin: bytes = b"",
          mode: str | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """Wall seconds of one new process; its CPU seconds go to ``CPU[mode]`` (less sensitive than
    wall time to a loaded machine; the server's CPU is not in it)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, env=env, capture_output=True, timeout=120)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if mode is not None:
        CPU.setdefault(mode, []).append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return elapsed, done


def route(note: dict[str, Any], prompt: str, number: int, tmp: Path) -> float:
    """The server's own share: ``POST /hooks/UserPromptSubmit`` from this process (no new process)."""
    import httpx

    body = {"payload": {"hook_event_name": "UserPromptSubmit", "session_id": f"bench-route-{number}",
                        "cwd": str(tmp), "transcript_path": str(tmp / "none.jsonl"), "prompt": prompt},
            "settings": {}}
    started = time.perf_counter()
    response = httpx.post(f"http://127.0.0.1:{note['port']}/hooks/UserPromptSubmit", json=body,
                          headers={"X-Localmem-Hook-Secret": note["secret"]}, timeout=60)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(values) * 1000, 1),
            "p95_ms": round(percentile(values, 0.95) * 1000, 1),
            "mean_ms": round(statistics.fmean(values) * 1000, 1), "n": len(values)}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="hook-latency-"))
    cache = Path(args.cache_dir) if args.embedder == "onnx" else None
    # This benchmark times `serve` against in-process; the warm process has its own
    # (daemon_latency.py). Without this, the first cold run starts one and the rest go through it.
    env = {**child_env(tmp, cache), "LOCALMEM_DAEMON": "0"}
    server_env = {**env, "XDG_RUNTIME_DIR": str(tmp / "run-server")}
    cold_env = {**env, "XDG_RUNTIME_DIR": str(tmp / "run-cold")}
    for folder in (tmp / "run-server", tmp / "run-cold"):
        folder.mkdir(mode=0o700)
    embedder = "hash"
    if args.embedder == "onnx":
        os.environ["LOCALMEM_CACHE_DIR"] = str(cache)
        os.environ["HF_HUB_OFFLINE"] = "1"
        from benchmarks.hooks.cold_start import ensure_export

        ensure_export(cache, env, say)
        embedder = f"onnx:{MODEL}"
    db = tmp / "memory.db"
    kept = Path(args.keep_store) if args.keep_store else None
    started = time.perf_counter()
    if kept is not None and kept.exists():
        shutil.copyfile(kept, db)  # a copy: the runs write ledgers into it
        count, questions = store_size(db, Path(args.data))
        say(f"store: {count} memories, a copy of {kept}")
    else:
        count, questions = build_store(db, embedder, Path(args.data))
        say(f"store: {count} memories ({embedder}) in {time.perf_counter() - started:.1f} s")
        if kept is not None:
            shutil.copyfile(db, kept)
    command = program(env)
    # A deadline far past any run: the figures are what an answer costs, not the default 2 s cut-off.
    hook = [*command, "--db", str(db), "hook", "UserPromptSubmit", "-v", "--deadline", "60"]
    port = free_port()
    server = subprocess.Popen([*command, "--db", str(db), "serve", "--port", str(port), "--log-level", "warning"],
                              env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    times: dict[str, list[float]] = {"server": [], "cold": [], "python": [], "server_no_inject": [], "route": [],
                                     "cli_recall": []}
    answered = {"server": 0, "cold": 0, "server_no_inject": 0}
    try:
        wait_until_healthy(server, f"http://127.0.0.1:{port}", seconds=120)
        deadline = time.monotonic() + 30
        while not any((tmp / "run-server" / "localmem").glob("*.json")):
            if time.monotonic() > deadline:
                raise SystemExit("the server wrote no discovery note")
            time.sleep(0.05)
        envs = {"server": server_env, "cold": cold_env,
                "server_no_inject": {**server_env, "LOCALMEM_HOOK_INJECT": "0"}}
        note = json.loads(next((tmp / "run-server" / "localmem").glob("*.json")).read_text())

        def one(mode: str, number: int) -> None:
            payload = {"hook_event_name": "UserPromptSubmit", "session_id": f"bench-{mode}-{number}",
                       "cwd": str(tmp), "transcript_path": str(tmp / "none.jsonl"),
                       "prompt": questions[number % len(questions)]}
            elapsed, done = timed(hook, envs[mode], json.dumps(payload).encode(),
                                  mode if number >= 0 else None)
            stderr = done.stderr.decode()
            who = "from in-process" if mode == "cold" else "from the localmem server"
            if done.returncode != 0 or who not in stderr:
                raise SystemExit(f"{mode} run {number} did not answer as expected:\n{stderr}")
            if number >= 0:
                times[mode].append(elapsed)
                answered[mode] += bool(done.stdout.strip())

        for warm in range(2):  # bytecode cache, the server's first request, the page cache
            one("server", -1 - warm)
            one("cold", -1 - warm)
        for number in range(args.runs):
            order = ("server", "cold") if number % 2 == 0 else ("cold", "server")
            for mode in order:
                one(mode, number)
            one("server_no_inject", number)
            elapsed, done = timed([*command, "--db", str(db), "recall", questions[number % len(questions)],
                                   "--json", "--limit", "24"], cold_env, mode="cli_recall")
            if done.returncode != 0:
                raise SystemExit(f"localmem recall failed:\n{done.stderr.decode()}")
            times["cli_recall"].append(elapsed)
            elapsed, _ = timed([sys.executable, "-c", "pass"], env, mode="python")
            times["python"].append(elapsed)
            times["route"].append(route(note, questions[number % len(questions)], number, tmp))
    finally:
        stop(server)
        shutil.rmtree(tmp, ignore_errors=True)
    result: dict[str, Any] = {mode: summary(values) for mode, values in times.items()}
    for mode, values in CPU.items():
        result[mode]["cpu_p50_ms"] = round(statistics.median(values) * 1000, 1)
    result["ratio_cold_over_server_p50"] = round(result["cold"]["p50_ms"] / result["server"]["p50_ms"], 2)
    result["answered"] = answered
    result["memories"] = count
    result["embedder"] = embedder
    result["command"] = " ".join(Path(c).name if i == 0 else c for i, c in enumerate(command))
    return result


def report(result: dict[str, Any], args: argparse.Namespace) -> str:
    server, cold, floor = result["server"], result["cold"], result["python"]
    met = lambda value, target: "met" if value <= target else "missed"  # noqa: E731
    lines = [
        f"## Hook latency (issue 34): `localmem hook UserPromptSubmit` as a new process ({result['embedder']})",
        "",
        f"`python benchmarks/hooks/hook_latency.py --runs {args.runs} --embedder {args.embedder}` at "
        f"{git_revision()}, {platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} cores (shared machine). Store: the LoCoMo dev conversations, "
        f"{result['memories']} memories; prompts: LoCoMo questions, one new session each, default hook "
        f"settings. Runs alternate server/cold pair by pair; `{result['command']}` processes.",
        "",
        "| path | p50 | p95 | mean | the process's CPU (p50) | target (p50) | answers with a block |",
        "|---|---:|---:|---:|---:|---|---:|",
        f"| forwarded to `localmem serve` | {server['p50_ms']} ms | {server['p95_ms']} ms | {server['mean_ms']} ms | "
        f"{server['cpu_p50_ms']} ms | ≤ 150 ms: {met(server['p50_ms'], 150)} | {result['answered']['server']}/{server['n']} |",
        f"| cold, in-process | {cold['p50_ms']} ms | {cold['p95_ms']} ms | {cold['mean_ms']} ms | "
        f"{cold['cpu_p50_ms']} ms | ≤ 600 ms: {met(cold['p50_ms'], 600)} | {result['answered']['cold']}/{cold['n']} |",
        f"| forwarded, injection off (`LOCALMEM_HOOK_INJECT=0`: process + client + round trip, no recall) | "
        f"{result['server_no_inject']['p50_ms']} ms | {result['server_no_inject']['p95_ms']} ms | "
        f"{result['server_no_inject']['mean_ms']} ms | {result['server_no_inject']['cpu_p50_ms']} ms | | "
        f"{result['answered']['server_no_inject']}/"
        f"{result['server_no_inject']['n']} |",
        f"| the server's share: `POST /hooks/UserPromptSubmit` from a warm client (no new process) | "
        f"{result['route']['p50_ms']} ms | {result['route']['p95_ms']} ms | {result['route']['mean_ms']} ms | | | |",
        f"| reference: `localmem recall QUESTION --json --limit 24`, a new process, no server (issue 32's "
        f"cold CLI figure) | {result['cli_recall']['p50_ms']} ms | {result['cli_recall']['p95_ms']} ms | "
        f"{result['cli_recall']['mean_ms']} ms | {result['cli_recall']['cpu_p50_ms']} ms | | |",
        f"| floor: `python -c pass` | {floor['p50_ms']} ms | {floor['p95_ms']} ms | {floor['mean_ms']} ms | {floor['cpu_p50_ms']} ms | | |",
        "",
        f"Cold / forwarded p50: {result['ratio_cold_over_server_p50']}x; cold hook / cold CLI recall p50: "
        f"{round(cold['p50_ms'] / result['cli_recall']['p50_ms'], 2)}x; forwarded / `python -c pass` p50: "
        f"{round(server['p50_ms'] / floor['p50_ms'], 2)}x.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30, help="measured runs per path (default 30)")
    parser.add_argument("--embedder", choices=("hash", "onnx"), default="hash")
    parser.add_argument("--data", default=str(DEFAULT_DATA), help=f"the LoCoMo dev file (default {DEFAULT_DATA})")
    parser.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(), "localmem-bench-cache"),
                        help="the ONNX export's folder (--embedder onnx)")
    parser.add_argument("--keep-store", metavar="PATH", help="reuse the store built at PATH (build it there "
                                                             "when missing): the ONNX build takes minutes")
    parser.add_argument("--write", action="store_true", help=f"write the section '{SECTION}-<embedder>' "
                                                             "of docs/results/history.md")
    args = parser.parse_args()
    result = measure(args)
    print(json.dumps(result, indent=2))
    text = report(result, args)
    print(text)
    if args.write:
        write_section(f"{SECTION}-{args.embedder}", text)


if __name__ == "__main__":
    main()
