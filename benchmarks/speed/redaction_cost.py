"""What credential redaction costs per call, with and without its literal prefilter (issues 40, 44).

- Per 1,000 characters (default): ``redact`` over realistic texts, every rule running (before) and
  the rules behind their prefilter (after), the two taking turns in one process, ``--rounds``
  rounds, each setting's median; the answers are compared first (they must be identical). Sets:
  LoCoMo dev turns, LongMemEval dev turns (a seeded sample of ``--lme-turns``), and Claude Code
  message shapes (benchmarks/hooks/capture_noise.py's tracebacks, logs, code, diffs, tool output
  and prose mixed with a dump), each as it is and with a credential from
  benchmarks/common/credential_corpus.py set into every text at a seeded place; and the short
  strings capture redacts beside each message (its tags and metadata values, ``capture-values``).
  Each set's mean length turns the figures into microseconds per call. ``--against TREE``: TREE's
  redact.py (before) against this tree's (after) instead, on the same sets (``answers_differ``: texts
  the two answer differently).
- ``--adversarial``: each rule's pattern alone on strings built to stress its quantifiers (its own
  sample match repeated, cut short, its prefix before a long run of one of its characters, …; see
  ``adversarial``), at each of ``--sizes`` characters: all its strings' seconds per size, how that
  grows from the first size to the last (linear work: about the size ratio), the slowest string. The
  patterns' search alone (not the checks run on what they find); ``--tree TREE``: that tree's rules; ``--kinds``:
  only the rules of those kinds (each keeps its index, so its strings are the same as in a run of all).
- ``--prechecks``: each rule with a precheck pattern (the .pgpass rule's ``:port:database:user:``) on the sets
  above, its gate and search with and without the precheck, taking turns: milliseconds per set, texts searched.
- ``--hook-notes PROMPTS``: how many notes, of how many characters, the prompt hook redacts per prompt
  on daemon_answer_paired.py's workload (what its paired timing can show of redaction).
- ``--capture BEFORE AFTER``: the Stop hook (``answer_hook_with_report(store, "Stop", …)``, hash
  embedder, a fresh database each run) capturing one long transcript in the real Claude Code shape
  (LoCoMo turns, message shapes and credentials), in each tree in turn, ``--rounds`` rounds: the
  median seconds of each and after ÷ before.

Timings are from a loaded shared machine: read the paired ratios, not the absolute times.

    python benchmarks/speed/redaction_cost.py [--rounds 9] [--lme-turns 4000] [--against /work/main]
    python benchmarks/speed/redaction_cost.py --adversarial [--sizes 131072,1048576] [--tree /work/main]
        [--kinds private-key,keyed-value]
    python benchmarks/speed/redaction_cost.py --capture /work/main . [--rounds 9]
    python benchmarks/speed/redaction_cost.py --prechecks [--rounds 9]
    python benchmarks/speed/redaction_cost.py --hook-notes 150
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
for entry in (str(ROOT), str(ROOT / "tests")):
    if entry not in sys.path:
        sys.path.insert(0, entry)

from benchmarks.common.credential_corpus import corpus  # noqa: E402
from benchmarks.common.regex_samples import sample  # noqa: E402
from benchmarks.hooks.capture_noise import MIXED, mixed_items, noise_items  # noqa: E402
from benchmarks.safety.redaction import DATA, lme_turns, locomo_turns  # noqa: E402


def text_sets(lme_count: int, seed: int = 3) -> dict[str, list[str]]:
    rng = random.Random(seed)
    lme = lme_turns(DATA / "lme-dev.json")
    shapes = [text for _, text in noise_items()] + [text for _, _, text in mixed_items(noise_items())]
    plain = {"locomo": locomo_turns(DATA / "locomo-dev.json"), "lme": rng.sample(lme, min(lme_count, len(lme))),
             "transcript-shapes": shapes}
    credentials = [text for _, _, text in corpus(per_format=20)]
    sets = dict(plain)
    sets["capture-values"] = capture_values(plain["locomo"][:400])
    for name, texts in plain.items():
        with_secret = []
        for text in texts:
            at = rng.randrange(len(text) + 1)
            with_secret.append(f"{text[:at]} {rng.choice(credentials)} {text[at:]}")
        sets[f"{name}+secret"] = with_secret
    return sets


def capture_values(turns: list[str]) -> list[str]:
    """The short strings capture redacts beside each message (each tag, each metadata value): the
    items ``capture.memory_items`` makes of ``turns``, every string but the content."""
    import uuid

    from localmem.hooks.capture import Turn, memory_items

    values = []
    for n, text in enumerate(turns):
        turn = Turn(str(uuid.UUID(int=n)), "user" if n % 2 == 0 else "assistant", text, None, False)
        for item in memory_items(turn, "8c1f6a0e-5d2b-4f7a-9e3c-2b1d0a9f8e7d", "billing", "/home/dev/billing"):
            values += item["tags"] + [v for v in item["metadata"].values() if isinstance(v, str)]
    return values


def per_thousand(redactor: Callable[[str], object], texts: list[str], chars: int) -> float:
    """Microseconds per 1,000 characters of one pass over ``texts``."""
    started = time.perf_counter()
    for text in texts:
        redactor(text)
    return (time.perf_counter() - started) / chars * 1e9


def redact_of_tree(tree: Path) -> Callable[[str], object]:
    """``redact`` of ``tree``'s localmem/privacy/redact.py, loaded beside this tree's (the modules it imports,
    ``errors`` and ``regex_literals``, are this tree's: compare trees that differ in redact.py only)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("localmem.privacy._redact_of_tree",
                                                  tree / "localmem" / "privacy" / "redact.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module.redact


def cost(rounds: int, lme_count: int, against: Path | None = None) -> dict:
    from localmem.privacy.redact import RULES, redact, redact_with_rules, without_prefilter

    every = without_prefilter(RULES)
    if against is None:
        settings = {"before (every rule)": lambda t: redact_with_rules(t, every),
                    "after (prefilter)": lambda t: redact_with_rules(t, RULES)}
    else:
        settings = {f"before ({against})": redact_of_tree(against), "after (this tree)": redact}
    first, second = settings.values()
    report = {}
    for name, texts in text_sets(lme_count).items():
        differ = sum(1 for t in texts if (first(t).text, first(t).findings) != (second(t).text, second(t).findings))
        chars = sum(map(len, texts))
        times: dict[str, list[float]] = {key: [] for key in settings}
        for round_ in range(rounds):
            order = list(settings) if round_ % 2 == 0 else list(reversed(settings))
            for key in order:
                times[key].append(per_thousand(settings[key], texts, chars))
        before, after = (statistics.median(times[k]) for k in settings)
        report[name] = {"texts": len(texts), "mean_chars": round(chars / len(texts)), "answers_differ": differ,
                        "with_findings": sum(1 for t in texts if redact(t).findings),
                        "us_per_1000_chars_before": round(before, 1), "us_per_1000_chars_after": round(after, 1),
                        "before_over_after": round(before / after, 2)}
        print(name, report[name], flush=True)
    return report


def precheck_cost(rounds: int, lme_count: int) -> dict:
    """Each rule with a precheck (``_Rule.precheck``, the .pgpass rule's) on every set: its gate and search with
    the precheck and without it (its strings still looked for), taking turns, ``rounds`` rounds, the medians in
    milliseconds per set; the texts each lets through, and whether the two find the same spans."""
    from dataclasses import replace

    from localmem.privacy.redact import RULES, _fold, _may_match

    def run(rule, texts: list[tuple[str, str]]) -> tuple[float, int, list]:
        started, searched, found = time.perf_counter(), 0, []
        for text, folded in texts:
            if _may_match(rule, text, folded):
                searched += 1
                found += [m.span() for m in rule.pattern.finditer(text)]
        return (time.perf_counter() - started) * 1e3, searched, found

    report = {}
    for rule in (rule for rule in RULES if rule.precheck is not None):
        plain = replace(rule, precheck=None)
        for name, raw in text_sets(lme_count).items():
            texts = [(text, _fold(text)) for text in raw]
            times: dict[str, list[float]] = {"without": [], "with": []}
            for round_ in range(rounds):
                for key in (("without", "with") if round_ % 2 == 0 else ("with", "without")):
                    times[key].append(run(plain if key == "without" else rule, texts)[0])
            (_, searched_without, spans_without), (_, searched_with, spans_with) = run(plain, texts), run(rule, texts)
            without, with_ = statistics.median(times["without"]), statistics.median(times["with"])
            report[f"{rule.kind} {name}"] = {
                "texts": len(texts), "searched_without": searched_without, "searched_with": searched_with,
                "same_spans": spans_without == spans_with, "ms_without": round(without, 2),
                "ms_with": round(with_, 2), "without_over_with": round(without / with_, 2)}
            print(f"{rule.kind} {name}", report[f"{rule.kind} {name}"], flush=True)
    return report


# -- hostile strings --------------------------------------------------------------------------

def adversarial(pattern, size: int, seed: int) -> dict[str, str]:
    """Strings of about ``size`` characters built on ``pattern``: a sample match of it repeated, cut
    one character short, or cut at a few places and repeated bare or with a separator; a prefix of it
    before a long run of one of its characters (from its start, quarters and end: its classes) then a
    near-miss."""
    rng = random.Random(seed)
    match = ""
    for _ in range(200):
        candidate = sample(pattern, rng)
        if pattern.search(f" {candidate} "):
            match = candidate
            break
    match = match or sample(pattern, rng)
    out = {}

    def fill(name: str, unit: str) -> None:
        if unit:
            out[name] = (unit * (size // len(unit) + 1))[:size]

    fill("match", match)
    fill("match+space", match + " ")
    fill("match-1", match[:-1])
    for cut in sorted({1, 2, 3, 4, 6, 8, len(match) // 2, len(match) - 2}):
        if 0 < cut < len(match):
            fill(f"cut{cut}", match[:cut])
            for separator in " -._:=/@\n":
                fill(f"cut{cut}{separator!r}", match[:cut] + separator)
    picked = [match[i] for i in (0, 1, len(match) // 4, len(match) // 2, 3 * len(match) // 4, -1) if match]
    for char in dict.fromkeys(picked):  # characters of the prefix, of each quantified class, the last
        for cut in (0, 3, len(match) // 2):
            for tail in ("!", "\u00e9", " "):
                out[f"{cut}+run{char!r}+{tail!r}"] = match[:cut] + char * (size - cut - 1) + tail
    return out


def time_rule(pattern, text: str) -> float:
    started = time.perf_counter()
    for _ in pattern.finditer(text):
        pass
    return time.perf_counter() - started


RULES_OF_TREE = ("import json; from localmem.privacy.redact import RULES; "
                 "print(json.dumps([(r.kind, r.pattern.pattern, r.pattern.flags) for r in RULES]))")


def tree_rules(tree: Path | None) -> list[tuple[str, object]]:
    """(kind, compiled pattern) of each rule of ``tree``'s code (read in a process of its own), or this tree's."""
    import os
    import re
    import subprocess

    if tree is None:
        from localmem.privacy.redact import RULES

        return [(rule.kind, rule.pattern) for rule in RULES]
    done = subprocess.run([sys.executable, "-c", RULES_OF_TREE], env=dict(os.environ, PYTHONPATH=str(tree)),
                          cwd=tree, capture_output=True, text=True, check=True)
    return [(kind, re.compile(pattern, flags)) for kind, pattern, flags in json.loads(done.stdout)]


def adversarial_report(sizes: list[int], tree: Path | None, kinds: set[str] | None = None) -> dict:
    """Per rule (of ``kinds`` only, when given): the seconds of all its strings at each size (its pattern's search
    alone), how that total grows from the first size to the last (linear work: about the size ratio; quadratic: its
    square), and the slowest string."""
    report = {}
    rules = tree_rules(tree)
    unknown = (kinds or set()) - {kind for kind, _ in rules}
    if unknown:
        raise SystemExit(f"--kinds: no rule of kind {', '.join(sorted(unknown))} in that tree")
    for index, (kind, pattern) in enumerate(rules):
        if kinds and kind not in kinds:
            continue
        totals, worst = {}, ("", 0.0)
        for size in sizes:
            times = {name: time_rule(pattern, text) for name, text in adversarial(pattern, size, index).items()}
            totals[size] = sum(times.values())
            if size == sizes[-1]:
                worst = max(times.items(), key=lambda item: item[1])
        report[f"{index}:{kind}"] = {"strings": len(times),
                                     "total_seconds": {s: round(t, 3) for s, t in totals.items()},
                                     "growth": round(totals[sizes[-1]] / totals[sizes[0]], 1),
                                     "size_ratio": round(sizes[-1] / sizes[0], 1),
                                     "slowest": worst[0], "slowest_seconds": round(worst[1], 4)}
        print(f"{index}:{kind}", report[f"{index}:{kind}"], flush=True)
    return report


# -- the Stop hook, tree against tree ---------------------------------------------------------

CAPTURE_WORKER = r"""
import json, sys, time
from localmem import MemoryStore
from localmem.hooks.events import answer_hook_with_report
from localmem.hooks.settings import HookSettings
transcript, db, cwd = sys.argv[1], sys.argv[2], sys.argv[3]
with MemoryStore(db, embedder="hash") as store:
    started, cpu = time.perf_counter(), time.process_time()
    report = answer_hook_with_report(store, "Stop", {"session_id": "bench", "transcript_path": transcript,
                                                     "cwd": cwd}, HookSettings()).report
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
print(json.dumps({"seconds": seconds, "cpu": cpu, "stored_messages": report["stored_messages"],
                  "stored_memories": report["stored_memories"], "more": report["more_to_read"]}))
"""


def write_transcript(path: Path, messages: int, seed: int = 5) -> None:
    from claude_code_transcript import Transcript  # tests/claude_code_transcript.py

    rng = random.Random(seed)
    turns = locomo_turns(DATA / "locomo-dev.json")
    shapes = [text for _, text in noise_items()] + [prose for prose, _ in MIXED]
    credentials = [text for _, _, text in corpus(per_format=4)]
    transcript = Transcript(path, "bench", str(path.parent))
    for n in range(messages):
        roll = rng.random()
        text = rng.choice(shapes) if roll < 0.2 else turns[n % len(turns)]
        if roll > 0.9:
            text = f"{text}\n{rng.choice(credentials)}"
        transcript.user(text) if n % 2 == 0 else transcript.assistant(text)


def capture_paired(before: Path, after: Path, rounds: int, messages: int) -> dict:
    from benchmarks.common.tree_worker import run_in_tree

    runs: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "transcript.jsonl"
        write_transcript(path, messages)
        trees = {"before": before, "after": after}
        for round_ in range(rounds):
            for name in (("before", "after") if round_ % 2 == 0 else ("after", "before")):
                runs[name].append(run_in_tree(trees[name], CAPTURE_WORKER, Path(folder) / f"{name}.db",
                                              [str(path), str(Path(folder) / f"{name}.db"), folder]))
    medians = {name: statistics.median(r["seconds"] for r in found) for name, found in runs.items()}
    cpu = {name: statistics.median(r["cpu"] for r in found) for name, found in runs.items()}
    stored = {name: sorted({(r["stored_messages"], r["stored_memories"], r["more"]) for r in found})
              for name, found in runs.items()}
    return {"messages": messages, "stored (messages, memories, more)": stored,
            "median_seconds": medians, "median_cpu_seconds": cpu,
            "before_over_after": round(medians["before"] / medians["after"], 3),
            "cpu_before_over_after": round(cpu["before"] / cpu["after"], 3)}


def hook_notes(prompts: int) -> dict:
    """How much text the prompt hook redacts: the notes it injects (``inject.format_note`` redacts each)
    over daemon_answer_paired.py's workload (scale.py's cached 10k store, its prompts, the real model),
    answered in this process with ``redact`` counted."""
    import os
    import shutil

    from benchmarks.hooks.cold_start import MODEL, environment
    from benchmarks.hooks.daemon_latency import say
    from benchmarks.hooks.first_answer import relabel
    from benchmarks.speed import scale
    from localmem import Config, MemoryStore
    from localmem.hooks import inject
    from localmem.hooks.events import answer_hook_with_report
    from localmem.hooks.settings import HookSettings

    env = environment(Path(tempfile.gettempdir()) / "localmem-bench-cache")
    os.environ.update({key: value for key, value in env.items() if key.startswith(("LOCALMEM", "HF_"))})
    source, _ = scale.cached(10_000, False, say)
    sizes: list[int] = []
    redact = inject.redact

    def counted(text: str, **options):
        sizes.append(len(text))
        return redact(text, **options)

    inject.redact = counted
    try:
        with tempfile.TemporaryDirectory() as folder:
            db = Path(folder) / "store.db"
            shutil.copyfile(source, db)
            relabel(db, MODEL)
            with MemoryStore(str(db), embedder="hash", config=Config(track_access=False)) as store:
                texts = [kwargs["query"] for _mode, kwargs, _vector in scale.workload(store, prompts + 10)][:prompts]
            with MemoryStore(str(db), config=Config(track_access=False)) as store:
                for number, text in enumerate(texts):
                    payload = {"session_id": f"notes-{number}", "prompt": text, "cwd": "/",
                               "hook_event_name": "UserPromptSubmit"}
                    answer_hook_with_report(store, "UserPromptSubmit", payload, HookSettings())
    finally:
        inject.redact = redact
    return {"prompts": len(texts), "notes_redacted": len(sizes),
            "notes_per_prompt": round(len(sizes) / len(texts), 2),
            "chars_per_prompt": round(sum(sizes) / len(texts), 1),
            "mean_note_chars": round(sum(sizes) / max(1, len(sizes)))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9, help="turns each setting or tree takes (default 9)")
    parser.add_argument("--lme-turns", type=int, default=4000, help="LongMemEval turns sampled (default 4000)")
    parser.add_argument("--adversarial", action="store_true", help="each rule on strings built to stress it")
    parser.add_argument("--tree", type=Path, help="with --adversarial: this tree's rules (default: this one's)")
    parser.add_argument("--sizes", default="131072,1048576", help="characters of each hostile string, comma-separated")
    parser.add_argument("--kinds", help="with --adversarial: only the rules of these kinds, comma-separated")
    parser.add_argument("--capture", nargs=2, metavar=("BEFORE", "AFTER"), type=Path,
                        help="the Stop hook capturing a long transcript in two trees, taking turns")
    parser.add_argument("--messages", type=int, default=600, help="messages of the captured transcript (default 600)")
    parser.add_argument("--against", type=Path, metavar="TREE",
                        help="cost per call of TREE's redact.py (before) against this tree's (after), taking turns")
    parser.add_argument("--prechecks", action="store_true",
                        help="each rule with a precheck, with and without it, taking turns, on every set")
    parser.add_argument("--hook-notes", type=int, metavar="PROMPTS",
                        help="the text the prompt hook redacts on daemon_answer_paired.py's first PROMPTS prompts")
    args = parser.parse_args()
    if min(args.rounds, args.lme_turns, 1 if args.hook_notes is None else args.hook_notes) < 1 or args.messages < 2:
        parser.error("--rounds, --lme-turns and --hook-notes must be at least 1, --messages at least 2")
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        parser.error(f"--sizes must be whole numbers separated by commas, got {args.sizes!r}")
    if any(size < 64 for size in sizes):
        parser.error(f"--sizes must each be at least 64 characters, got {args.sizes!r}")
    if args.kinds and not args.adversarial:
        parser.error("--kinds goes with --adversarial")
    if args.adversarial:
        kinds = {kind.strip() for kind in args.kinds.split(",") if kind.strip()} if args.kinds else None
        report = adversarial_report(sizes, args.tree.resolve() if args.tree else None, kinds)
    elif args.prechecks:
        report = precheck_cost(args.rounds, args.lme_turns)
    elif args.hook_notes:
        report = hook_notes(args.hook_notes)
    elif args.capture:
        report = capture_paired(args.capture[0].resolve(), args.capture[1].resolve(), args.rounds, args.messages)
    else:
        report = cost(args.rounds, args.lme_turns, args.against.resolve() if args.against else None)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
