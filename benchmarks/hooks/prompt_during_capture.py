"""Prompts the warm process answers while it captures a long transcript, two trees taking turns (issue 44).

Each round and tree: a fresh store in a temporary folder, one decision stored, the tree's warm
process started (``localmem daemon start``, the default model), a 400-turn Claude Code transcript
(tests/claude_code_transcript.py's real JSONL shape) written, and its ``Stop`` hook run; while it
captures, ``UserPromptSubmit`` hooks are sent one after another, each a whole client process as
Claude Code runs it. Per round and tree: the capture's seconds and messages stored, and the
prompts' median / p90 / max seconds and how many missed their deadline; then the median over
rounds of B ÷ A. The trees take turns at going first. Loaded machines: read the ratios.

    python benchmarks/hooks/prompt_during_capture.py TREE_A TREE_B [--rounds 4] [--turns 400]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.claude_code_transcript import Transcript  # noqa: E402


def one_round(tree: Path, turns: int) -> dict[str, Any]:
    base = Path(tempfile.mkdtemp(prefix="lm-capture-prompts-"))
    try:
        run = base / "run"
        run.mkdir(mode=0o700)
        db, project = base / "store.db", base / "orchid"
        (project / ".git").mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_")}
        env.update(PYTHONPATH=str(tree), PYTHONIOENCODING="utf-8", XDG_RUNTIME_DIR=str(run),
                   LOCALMEM_DAEMON_IDLE="300", HF_HUB_OFFLINE="1")

        def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
            return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), *args], input=stdin,
                                  capture_output=True, env=env, cwd=str(tree), timeout=300)

        cli("store", "Decision: orchid deploys run nightly at 02:00 UTC from the release branch.",
            "--tags", "project:orchid")
        cli("daemon", "start")
        session = str(uuid.uuid4())
        transcript = Transcript(base / f"{session}.jsonl", session, str(project))
        for i in range(turns):
            transcript.user(f"turn {i}: the orchid service {i} needs its config key service_{i}_timeout "
                            f"set to {i * 7} seconds.")
            transcript.assistant(f"reply {i}: I set service_{i}_timeout to {i * 7} seconds in orchid's "
                                 "config file, and noted it.")
        stop_payload = json.dumps({"session_id": session, "cwd": str(project),
                                   "transcript_path": str(transcript.path)}).encode()
        capture: dict[str, Any] = {}
        done = threading.Event()

        def stop() -> None:
            started = time.monotonic()
            capture["run"] = cli("hook", "Stop", "-v", stdin=stop_payload)
            capture["seconds"] = time.monotonic() - started
            done.set()

        worker = threading.Thread(target=stop)
        worker.start()
        time.sleep(0.3)  # the capture has begun
        seconds: list[float] = []
        missed = 0
        while not done.is_set():
            started = time.monotonic()
            prompt = json.dumps({"session_id": str(uuid.uuid4()), "cwd": str(project),
                                 "prompt": f"what timeout does orchid service {len(seconds)} use?"}).encode()
            answered = cli("hook", "UserPromptSubmit", stdin=prompt)
            if done.is_set():
                break  # this prompt was not wholly during the capture
            seconds.append(time.monotonic() - started)
            missed += "deadline" in answered.stderr.decode()
        worker.join()
        cli("daemon", "stop")
        stored = re.search(r"capture: (\d+) message", capture["run"].stderr.decode())
        seconds.sort()
        return {"capture_s": round(capture["seconds"], 2), "stored": int(stored.group(1)) if stored else None,
                "prompts": len(seconds), "missed_deadline": missed,
                "median": round(seconds[len(seconds) // 2], 3) if seconds else None,
                "p90": round(seconds[int(len(seconds) * 0.9)], 3) if seconds else None,
                "max": round(seconds[-1], 3) if seconds else None}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree_a", type=Path)
    parser.add_argument("tree_b", type=Path)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args()
    if args.rounds < 1 or args.turns < 10:
        parser.error("--rounds must be at least 1 and --turns at least 10")
    ratios: dict[str, list[float]] = {"median": [], "p90": [], "capture_s": []}
    for number in range(args.rounds):
        order = [("A", args.tree_a), ("B", args.tree_b)]
        order = order if number % 2 == 0 else order[::-1]
        found = {tag: one_round(tree.resolve(), args.turns) for tag, tree in order}
        for tag in ("A", "B"):
            print(json.dumps({"round": number, "tree": tag, **found[tag]}), flush=True)
        for key in ratios:
            if found["A"][key] and found["B"][key]:
                ratios[key].append(found["B"][key] / found["A"][key])
    for key, values in ratios.items():
        if values:
            print(f"B / A {key}: median {statistics.median(values):.3f} over {len(values)} rounds "
                  f"({', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
