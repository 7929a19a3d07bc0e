"""What capture keeps: real dev conversations kept, synthetic noise skipped, noise among stored turns.

Sets, each turned into Claude Code transcripts (tests/claude_code_transcript.py's real JSONL shape):

- LoCoMo dev (``../shared/data/locomo-dev.json``): two people; speaker A's turns are the user's,
  speaker B's the assistant's. Evidence: the turns the QA annotations cite.
- LongMemEval dev (``../shared/data/lme-dev.json``): its real user/assistant roles; every distinct
  haystack session once. Evidence: the turns marked ``has_answer``.
- Noise: messages built here by shape (tracebacks, logs, code dumps, diffs, JSON tool output,
  shell output, pleasantries), from templates and a seeded generator, none taken from a dev set;
  and "mixed" messages (a real prose statement with a dump in it), where the prose must be kept
  and the dump cut.

Each transcript goes through the capture rules exactly as ``localmem hook Stop`` applies them
(``capture.turn_of`` with the rules in force, one entry at a time); one LoCoMo conversation is
also captured end to end through ``answer_hook_with_report`` into a store, to check that the
counts agree.

Noise among stored turns: a seeded random sample of stored turns per set (``--sample``), labelled
by reading (the labels are in benchmarks/capture_noise_labels.json, keyed by set and turn id).
The labelling rule: a turn is **noise** when a reader would not want it recalled in a later
session, i.e. it holds no fact, preference, plan, event, decision, opinion with a reason, or
request that says something about the person: greetings and pleasantries ("Hey Mel! Good to see
you! How have you been?"), thanks and praise with nothing else, filler questions ("What's up?",
"How did that feel?"), and code, logs or tool output. Everything else is **content**, short or
long. ``--label`` prints the sample for labelling (with each turn's key).

    HF_HUB_OFFLINE=1 nice -n 10 python benchmarks/capture_noise.py [--rules FILE] [--sample 100] [--label]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from localmem import MemoryStore  # noqa: E402
from localmem.hooks.capture import turn_of  # noqa: E402
from localmem.hooks.events import answer_hook_with_report  # noqa: E402
from localmem.hooks.message_shape import is_bare_question, is_retraction  # noqa: E402
from localmem.hooks.noise_rules import load_rules  # noqa: E402
from localmem.hooks.settings import HookSettings  # noqa: E402
from tests.claude_code_transcript import Transcript  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
LABELS = Path(__file__).resolve().parent / "capture_noise_labels.json"


# -- the dev sets as (key, role, text, is_evidence) turns, by conversation ------------------

def locomo_conversations() -> Iterator[tuple[str, list[tuple[str, str, str, bool]]]]:
    for sample in json.loads((DATA / "locomo-dev.json").read_text("utf-8")):
        evidence = {e for qa in sample["qa"] for e in qa.get("evidence", [])}
        conv = sample["conversation"]
        turns = []
        for key in sorted((k for k in conv if k.startswith("session_") and isinstance(conv[k], list)),
                          key=lambda k: int(k.split("_")[1])):
            for turn in conv[key]:
                role = "user" if turn["speaker"] == conv["speaker_a"] else "assistant"
                turns.append((f"{sample['sample_id']}:{turn['dia_id']}", role, turn["text"],
                              turn["dia_id"] in evidence))
        yield sample["sample_id"], turns


def lme_conversations() -> Iterator[tuple[str, list[tuple[str, str, str, bool]]]]:
    seen: set[str] = set()
    for instance in json.loads((DATA / "lme-dev.json").read_text("utf-8"))["instances"]:
        for session_id, session in zip(instance["haystack_session_ids"], instance["haystack_sessions"]):
            if session_id in seen:
                continue
            seen.add(session_id)
            yield session_id, [(f"{session_id}:{i}", t["role"], t["content"], bool(t.get("has_answer")))
                               for i, t in enumerate(session)]


# -- the synthetic noise set, by shape -------------------------------------------------------

def noise_items(seed: int = 7) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    words = ["queue", "billing", "auth", "render", "cache", "index", "worker", "parser", "ledger", "sync"]
    items: list[tuple[str, str]] = []
    for n in range(40):
        w = rng.choice(words)
        frames = "".join(f'  File "/srv/app/{w}/mod_{i}.py", line {rng.randint(5, 400)}, in step_{i}\n'
                         f"    value = handle_{i}(payload, attempt={i})\n" for i in range(rng.randint(2, 30)))
        items.append(("traceback", f"Traceback (most recent call last):\n{frames}KeyError: '{w}_id'"))
        java = "\n".join(f"\tat com.example.{w}.Service{i}.call(Service{i}.java:{rng.randint(10, 900)})"
                         for i in range(rng.randint(3, 25)))
        items.append(("traceback", f"java.lang.IllegalStateException: {w} not ready\n{java}"))
        node = "\n".join(f"    at {w}Handler{i} (/app/src/{w}/h{i}.js:{rng.randint(1, 300)}:{rng.randint(1, 40)})"
                         for i in range(rng.randint(3, 12)))
        items.append(("traceback", f"TypeError: Cannot read properties of undefined (reading '{w}')\n{node}"))
        level = ["INFO", "WARN", "ERROR", "DEBUG"]
        log = "\n".join(f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T0{rng.randint(0, 9)}:{rng.randint(10, 59)}:"
                        f"{rng.randint(10, 59)}Z {rng.choice(level)} {w}.worker[{rng.randint(100, 999)}]: processed "
                        f"batch {rng.randint(1, 9999)} in {rng.randint(1, 900)}ms" for _ in range(rng.randint(3, 40)))
        items.append(("log", log))
        items.append(("log", "\n".join(f"[{rng.randint(10, 23)}:{rng.randint(10, 59)}:{rng.randint(10, 59)}] "
                                       f"{rng.choice(level)} {w}: retry {i} of 5" for i in range(rng.randint(3, 9)))))
        items.append(("log", "============================= test session starts ==============================\n"
                             f"collected {rng.randint(5, 90)} items\n\n"
                      + "\n".join(f"tests/test_{w}.py::test_case_{i} {rng.choice(['PASSED', 'FAILED'])}"
                                  for i in range(rng.randint(3, 20)))
                      + f"\n\n========================= {rng.randint(1, 9)} failed, {rng.randint(5, 80)} passed in "
                        f"{rng.randint(1, 30)}.{rng.randint(10, 99)}s ========================="))
        body = "\n".join(f"def {w}_{i}(data):\n    result = transform(data, mode='{w}')\n    return result[{i}]\n"
                         for i in range(rng.randint(2, 15)))
        items.append(("code", f"```python\n{body}\n```"))
        items.append(("code", body))
        js = "\n".join(f"export function {w}{i}(input) {{\n  const out = input.map(x => x * {i});\n  return out;\n}}"
                       for i in range(rng.randint(2, 10)))
        items.append(("code", js))
        sql = (f"SELECT {w}_id, count(*) AS n\nFROM {w}_events\nWHERE created_at > now() - interval '1 day'\n"
               f"GROUP BY {w}_id\nORDER BY n DESC\nLIMIT {rng.randint(5, 50)};")
        items.append(("code", sql))
        items.append(("diff", f"diff --git a/src/{w}.py b/src/{w}.py\nindex 1a2b3c4..5d6e7f8 100644\n--- a/src/{w}.py\n"
                              f"+++ b/src/{w}.py\n@@ -{rng.randint(1, 90)},7 +{rng.randint(1, 90)},7 @@\n"
                              f" import os\n-LIMIT = {rng.randint(1, 9)}\n+LIMIT = {rng.randint(10, 99)}\n"
                              f" def run():\n-    return old_{w}()\n+    return new_{w}()\n"))
        items.append(("json", json.dumps({"status": rng.choice(["ok", "error"]), "count": rng.randint(0, 99),
                                          "items": [{"id": i, w: rng.randint(0, 9)} for i in range(rng.randint(1, 6))]},
                                         indent=2)))
        items.append(("json", json.dumps({"jsonrpc": "2.0", "id": rng.randint(1, 99),
                                          "result": {"content": [{"type": "text", "text": f"{w} done"}]}})))
        items.append(("shell", f"$ ls -la src/{w}\n" + "\n".join(
            f"-rw-r--r--  1 dana staff  {rng.randint(100, 9999)} Nov {rng.randint(1, 28)} 10:{rng.randint(10, 59)} "
            f"{w}_{i}.py" for i in range(rng.randint(3, 12)))))
        items.append(("shell", f"$ pip install {w}-client\nCollecting {w}-client\n  Downloading {w}_client-1.{n}.0-"
                               f"py3-none-any.whl (45 kB)\nInstalling collected packages: {w}-client\n"
                               f"Successfully installed {w}-client-1.{n}.0"))
    pleasantries = [
        "ok", "OK.", "okay!", "k", "thanks", "Thanks!", "thank you", "Thank you so much!", "thx", "ty!",
        "great", "Great, thanks!", "great, thank you!!", "perfect", "Perfect, that works.", "awesome, thanks",
        "cool", "Cool, go ahead.", "nice!", "yes", "Yes please.", "yep", "yes go ahead", "Sure, go ahead.",
        "sounds good", "Sounds good to me!", "looks good", "LGTM", "lgtm, thanks", "that works",
        "thanks, that's all for today", "That's all, thanks!", "got it", "Got it, thanks.", "makes sense",
        "understood", "alright", "all right, continue", "please continue", "go on", "proceed",
        "much appreciated", "cheers!", "brilliant, cheers", "thanks a lot", "you're welcome", "no problem",
        "nope, that's it", "bye!", "see you tomorrow", "great work", "good job", "nice work, thanks",
        "haha nice", "wow, amazing", "excellent", "wonderful, thank you", "ok cool", "yes, do it", "do it",
    ]
    items += [("pleasantry", p) for p in pleasantries]
    return items


MIXED = [
    ("The nightly export fails since we upgraded the driver; we decided to pin psycopg to 3.1 until the fix "
     "lands.", "traceback"),
    ("Our billing service bills customers on the first of each month, and refunds go through the ledger team.",
     "log"),
    ("Keep the worker pool at 8 processes; more makes the database connection limit the bottleneck.", "code"),
    ("We agreed to raise the upload limit to 50 MB for enterprise accounts only.", "diff"),
    ("The search index is rebuilt every Sunday at 03:00 and takes about forty minutes.", "json"),
]


# Written once, before the first measurement, and not edited after it (report misses as misses).
RETRACTIONS = [
    "Actually, let's not add the cache layer yet.", "Scratch that, keep the old endpoint.",
    "No wait, use Postgres instead.", "Wait, no: the deadline is Friday, not Thursday.",
    "On second thought, let's keep the monorepo.", "Actually, use poetry instead of pip-tools.",
    "Correction: the staging host is stage-2, not stage-1.", "I changed my mind, we'll ship it in March.",
    "Forget that, the migration can wait.", "Ignore what I said about the logo.",
    "Never mind, the tests pass now.", "Sorry, I meant the billing service, not orders.",
    "Hmm, let's not rename the module after all.", "Oops, that was wrong: the port is 8443.",
    "Disregard my last message, the bug was in my config.", "OK scratch that, revert to v2.",
    "Actually no, keep tabs; switch to spaces later instead.", "Wait no, don't merge it yet.",
    "No, wait, I want the blue theme.", "Actually we shouldn't delete those rows.",
    "I've changed my mind about the name: call it orchid-api.", "Oh, on second thought, skip the survey.",
    "Let me correct myself: the meeting is at 3 pm.", "That's not right, the limit is 50 MB.",
    "Rather than Redis, let's use the database queue.", "Undo that last change please, it broke the build.",
    "Not MySQL, I meant MariaDB.", "Hold on, we can't drop Python 3.9 yet.",
    "Let's go back to the previous plan with two workers.", "Strike that, we keep the nightly job.",
]
NOT_RETRACTIONS = [
    "Actually, the build is green now.", "We don't use MySQL anywhere.", "This show might scratch that itch.",
    "Let's not forget to update the changelog.", "I changed jobs last year and moved to Lisbon.",
    "Correctional facilities in the state are overcrowded.", "Never mind the weather, we hiked anyway.",
    "Actually I love the new dashboard.", "Wait until the deploy finishes before you test.",
    "No tests fail on main.", "Ignore the warnings from the linter for generated files.",
    "Forget-me-nots grow well in shade.", "We won the hackathon with the queue project!",
    "Instead of a party we had a quiet dinner.", "Sorry I was late to the standup.",
    "The scratch disk is full again.", "On the second floor there is a quiet room.",
    "Oh, we don't have a staging database.", "I mind the noise from the fans when I record.",
    "No, I haven't tried the new API yet.", "Actually, Priya approves all access requests.",
    "Use pytest, never unittest.", "The correction factor is 1.2 for the sensor.",
    "My mind was blown by the concert.", "Let's schedule the retro for Monday.",
    "We shouldn't forget Nina's birthday.", "Hmm, that looks like a flaky test.",
    "No wait times at the clinic on Sundays.", "Disregarding the outliers, the mean is 4.2.",
    "Ok, we won't need the VPN for this one.",
]


def mixed_items(noise: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """(prose, dump, message): each mixed message holds the prose, then a long dump of a shape."""
    out = []
    for prose, shape in MIXED:
        dump = max((text for kind, text in noise if kind == shape), key=len)
        out.append((prose, dump, f"{prose}\n\n{dump}"))
        out.append((prose, dump, f"{dump}\n\n{prose}"))
    return out


# -- running the rules ----------------------------------------------------------------------

def decide(messages: list[tuple[str, str]], rules: Any, workdir: Path, name: str
           ) -> list[tuple[str | None, str | None]]:
    """Each (role, text) through capture's rules as written to a real-shaped transcript: (kept text
    or None, skip reason or None)."""
    path = workdir / f"{name}.jsonl"
    path.unlink(missing_ok=True)
    transcript = Transcript(path, "bench", str(workdir))
    for role, text in messages:
        if role == "user":
            transcript.user(text)
        else:
            transcript.assistant(text)
    out = []
    for line in path.read_text("utf-8").splitlines():
        skipped: Counter[str] = Counter()
        turn = turn_of(json.loads(line), rules, skipped)
        out.append((turn.text if turn else None, next(iter(skipped), None) if turn is None else None))
    return out


def key_hash(key: str) -> str:
    return hashlib.sha1(key.encode("utf-8")).hexdigest()[:12]


def measure_set(name: str, conversations: list[tuple[str, list]], rules: Any, workdir: Path,
                sample: int, rng: random.Random) -> dict[str, Any]:
    total = kept = evidence = evidence_kept = 0
    by_rule: Counter[str] = Counter()
    dropped: dict[str, list[str]] = {}
    dropped_evidence: list[str] = []
    stored: list[tuple[str, str, str]] = []
    bare_questions = bare_evidence = cut_evidence = 0
    cut_turns: list[str] = []
    retractions: list[str] = []
    for conv_id, turns in conversations:
        results = decide([(role, text) for _, role, text, _ in turns], rules, workdir, "t")
        for (key, role, text, is_evidence), (kept_text, reason) in zip(turns, results):
            total += 1
            evidence += is_evidence
            if role == "user" and is_bare_question(text.strip(), rules):
                bare_questions += 1
                bare_evidence += is_evidence
            if kept_text is not None:
                if is_retraction(kept_text, rules):
                    retractions.append(kept_text)
                kept += 1
                evidence_kept += is_evidence
                stored.append((key, role, kept_text))
                if kept_text != text.strip():
                    cut_turns.append(text)
                    cut_evidence += is_evidence
            else:
                by_rule[reason] += 1
                dropped.setdefault(reason, []).append(text)
                if is_evidence:
                    dropped_evidence.append(text)
    picked = rng.sample(stored, min(sample, len(stored)))
    return {"set": name, "turns": total, "kept": kept, "evidence": evidence, "evidence_kept": evidence_kept,
            "skipped_by_rule": dict(by_rule), "dropped_examples": {r: rng.sample(v, min(6, len(v)))
                                                                     for r, v in dropped.items()},
            "dropped_evidence": dropped_evidence, "bare_user_questions": bare_questions,
            "bare_user_questions_that_are_evidence": bare_evidence, "cut_turns": len(cut_turns),
            "cut_evidence": cut_evidence, "retractions": retractions,
            "cut_examples": rng.sample(cut_turns, min(4, len(cut_turns))),
            "sample": [(f"{name}:{key_hash(k)}", role, text) for k, role, text in picked]}


def end_to_end_check(conversation: list, rules_path: str | None, workdir: Path, rules: Any) -> tuple[int, int]:
    """One conversation captured through the hook into a store: (messages stored, kept by decide)."""
    path = workdir / "e2e.jsonl"
    path.unlink(missing_ok=True)
    transcript = Transcript(path, "e2e-session", str(workdir))
    for _, role, text, _ in conversation:
        transcript.user(text) if role == "user" else transcript.assistant(text)
    expected = sum(1 for text, _ in decide([(r, t) for _, r, t, _ in conversation], rules, workdir, "x")
                   if text is not None)
    with MemoryStore(workdir / "e2e.db", embedder="hash") as store:
        report = answer_hook_with_report(store, "Stop", {"session_id": "e2e-session", "transcript_path": str(path),
                                                         "cwd": str(workdir)},
                                         HookSettings(rules_path=rules_path)).report
    return report["stored_messages"], expected


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rules", help="a hook-rules.json to measure instead of the built-in rules")
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--label", action="store_true", help="print the samples to label, and stop")
    parser.add_argument("--sets", default="locomo,lme")
    args = parser.parse_args()
    rules = load_rules(args.rules, {"XDG_CONFIG_HOME": "/nonexistent"} if not args.rules else None)
    labels = json.loads(LABELS.read_text("utf-8")) if LABELS.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        sources = {"locomo": locomo_conversations, "lme": lme_conversations}
        for name in args.sets.split(","):
            conversations = list(sources[name]())
            result = measure_set(name, conversations, rules, workdir, args.sample, random.Random(args.seed))
            if args.label:
                for key, role, text in result["sample"]:
                    print(json.dumps({"key": key, "role": role, "label": labels.get(key), "text": text[:600]}))
                continue
            report_set(result, labels)
            if name == "locomo":
                stored, expected = end_to_end_check(conversations[0][1], args.rules, workdir, rules)
                print(f"  end to end through the Stop hook, {conversations[0][0]}: {stored} messages stored, "
                      f"{expected} kept by the rules ({'agree' if stored == expected else 'DISAGREE'})")
        if not args.label:
            report_noise(rules, workdir)


def report_set(result: dict[str, Any], labels: dict[str, str]) -> None:
    name = result["set"]
    print(f"\n## {name}: {result['turns']} turns")
    print(f"  kept {result['kept']} ({result['kept'] / result['turns']:.1%}); skipped by rule "
          f"{result['skipped_by_rule']}")
    print(f"  evidence turns kept: {result['evidence_kept']}/{result['evidence']} "
          f"({result['evidence_kept'] / max(1, result['evidence']):.1%})")
    for text in result["dropped_evidence"]:
        print(f"    evidence dropped: {text[:160]!r}")
    print(f"  bare user questions (the bare_question rule's matches, whether it is on or not): "
          f"{result['bare_user_questions']}, of which evidence: {result['bare_user_questions_that_are_evidence']}")
    print(f"  kept with code/log-shaped parts cut: {result['cut_turns']} (evidence among them: "
          f"{result['cut_evidence']})")
    for text in result["cut_examples"]:
        print(f"    cut from: {text[:140]!r}")
    for reason, examples in result["dropped_examples"].items():
        for text in examples:
            print(f"    dropped ({reason}): {text[:140]!r}")
    print(f"  stored turns read as retractions (each supersedes earlier turns): {len(result['retractions'])}")
    for text in result["retractions"][:10]:
        print(f"    retraction: {text[:140]!r}")
    sample = result["sample"]
    marked = [labels.get(key) for key, _, _ in sample]
    done = [m for m in marked if m in ("noise", "content")]
    if done:
        noise = sum(1 for m in done if m == "noise")
        print(f"  labelled sample of stored turns: {noise}/{len(done)} noise ({noise / len(done):.1%}); "
              f"{len(sample) - len(done)} unlabelled")
        for (key, role, text), mark in zip(sample, marked):
            if mark == "noise":
                print(f"    noise stored: {text[:140]!r}")


def report_noise(rules: Any, workdir: Path) -> None:
    noise = noise_items()
    results = decide([("user", text) for _, text in noise], rules, workdir, "noise")
    by_kind: dict[str, list[int]] = {}
    missed: list[str] = []
    for (kind, text), (kept_text, _) in zip(noise, results):
        counts = by_kind.setdefault(kind, [0, 0])
        counts[0] += 1
        counts[1] += kept_text is None
        if kept_text is not None:
            missed.append(f"{kind}: {text[:100]!r} -> kept {kept_text[:80]!r}")
    total = sum(c[0] for c in by_kind.values())
    skipped = sum(c[1] for c in by_kind.values())
    print(f"\n## synthetic noise: {total} items, skipped {skipped} ({skipped / total:.1%})")
    for kind, (n, s) in sorted(by_kind.items()):
        print(f"  {kind}: {s}/{n} skipped")
    for line in missed[:15]:
        print(f"    kept: {line}")
    found = sum(1 for text in RETRACTIONS if is_retraction(text, rules))
    false = [text for text in NOT_RETRACTIONS if is_retraction(text, rules)]
    print(f"\n## retractions (phrases written by hand): {found}/{len(RETRACTIONS)} read as retractions; "
          f"{len(false)}/{len(NOT_RETRACTIONS)} near misses wrongly read as one")
    for text in RETRACTIONS:
        if not is_retraction(text, rules):
            print(f"    missed: {text!r}")
    for text in false:
        print(f"    wrongly read as a retraction: {text!r}")
    mixed = mixed_items(noise)
    results = decide([("user", message) for _, _, message in mixed], rules, workdir, "mixed")
    good = sum(1 for (prose, dump, _), (kept_text, _) in zip(mixed, results)
               if kept_text is not None and prose in kept_text and dump.splitlines()[-1] not in kept_text)
    print(f"  mixed prose + dump: {good}/{len(mixed)} kept the prose and cut the dump")


if __name__ == "__main__":
    main()
