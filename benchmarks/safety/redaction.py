"""Redaction (localmem/privacy/redact.py): false positives on ordinary text, recall on credentials, cost.

- False positives: every turn of the LoCoMo and LongMemEval dev sets (ordinary conversation,
  no credentials) is redacted; a turn with any finding is a false positive. Each is printed so
  it can be read.
- Recall: the synthetic corpus of benchmarks/common/credential_corpus.py (formats from the providers'
  documentation); a credential is caught when no 12-character piece of it survives. Apart: passwords on
  command lines and in short notes (its COMMAND_LINES, caught when no 8-character piece survives), and its
  LOOKALIKES (innocent texts of the same shapes: each one touched is a false positive, printed).
- Held out (``--heldout [--tree TREE]``): benchmarks/common/credential_heldout.py's formats no rule was written
  from, recall per format and per half (rules are developed on its ``split()``'s first half; the second half is
  the honest figure), caught when no 12-character piece (8 for a secret under 24 characters) survives; one
  missed text per format is printed as redacted. ``--tree``: that tree's ``redact`` (a process of its own).
- Second held out (``--heldout2 [--tree TREE]``): benchmarks/common/credential_heldout2.py, measured as
  ``--heldout``, and its look-alike non-secrets per half (each text ``redact`` changes is a false positive, printed).
  ``--heldout3``: benchmarks/common/credential_heldout3.py, the same, all of it held out (one "report" half).
  ``--heldout4``: benchmarks/common/credential_heldout4.py, as ``--heldout2`` (both halves, look-alikes per half).
  ``--heldout5``: benchmarks/common/credential_heldout5.py, the same.
- Same answers (``--same-as TREE``): every text of the in-sample corpus, its command lines and look-alikes, the five
  held-out corpora and their look-alikes, and the LoCoMo and LongMemEval dev turns, redacted by TREE's ``redact`` and
  by this tree's: how many outputs differ per set (a change meant to alter no answer; each difference printed).
- Cost: seconds per turn of ``redact`` over the dev-set turns (a captured turn's work), on a
  loaded shared machine: compare the ratio to detect-secrets' scan of the same lines, run in
  the same process, when detect-secrets is installed (``--detect-secrets``).

    python benchmarks/safety/redaction.py [--detect-secrets] [--limit N] [--store-turns N]
    python benchmarks/safety/redaction.py --heldout [--tree /work/main]
    python benchmarks/safety/redaction.py --heldout2 [--tree /work/main]
    python benchmarks/safety/redaction.py --heldout3 [--tree /work/main]
    python benchmarks/safety/redaction.py --heldout4 [--tree /work/main]
    python benchmarks/safety/redaction.py --heldout5 [--tree /work/main]
    python benchmarks/safety/redaction.py --same-as /work/main
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.common.credential_corpus import FORMATS, LOOKALIKES, command_corpus, corpus  # noqa: E402
from benchmarks.common.credential_heldout import heldout_corpus, split  # noqa: E402
from benchmarks.common.credential_heldout2 import heldout2_corpus, lookalike_corpus, split_lookalikes  # noqa: E402
from benchmarks.common.credential_heldout2 import split as split2  # noqa: E402
from benchmarks.common.credential_heldout3 import FORMATS as FORMATS3  # noqa: E402
from benchmarks.common.credential_heldout3 import LOOKALIKES as LOOKALIKES3  # noqa: E402
from benchmarks.common.credential_heldout3 import heldout3_corpus, lookalike3_corpus  # noqa: E402
from benchmarks.common.credential_heldout4 import heldout4_corpus, lookalike4_corpus  # noqa: E402
from benchmarks.common.credential_heldout4 import split as split4  # noqa: E402
from benchmarks.common.credential_heldout4 import split_lookalikes as split_lookalikes4  # noqa: E402
from benchmarks.common.credential_heldout5 import heldout5_corpus, lookalike5_corpus  # noqa: E402
from benchmarks.common.credential_heldout5 import split as split5  # noqa: E402
from benchmarks.common.credential_heldout5 import split_lookalikes as split_lookalikes5  # noqa: E402

from localmem.privacy import redact  # noqa: E402

DATA = ROOT.parent / "shared" / "data"


def locomo_turns(path: Path) -> list[str]:
    turns = []
    for sample in json.loads(path.read_text()):
        for key, session in sample["conversation"].items():
            if key.startswith("session_") and isinstance(session, list):
                turns += [turn["text"] for turn in session if isinstance(turn.get("text"), str)]
    return turns


def lme_turns(path: Path) -> list[str]:
    turns: list[str] = []
    seen: set[str] = set()  # haystack sessions repeat across instances: each turn once
    for instance in json.loads(path.read_text())["instances"]:
        for session in instance["haystack_sessions"]:
            for turn in session:
                text = turn.get("content")
                if isinstance(text, str) and text not in seen:
                    seen.add(text)
                    turns.append(text)
    return turns


def caught(secret: str, out: str, piece: int = 12) -> bool:
    return not any(secret[i:i + piece] in out for i in range(max(1, len(secret) - piece + 1)))


def false_positives(name: str, turns: list[str]) -> dict:
    found: list[tuple[str, dict]] = []
    start = time.perf_counter()
    for text in turns:
        result = redact(text)
        if result.findings:
            found.append((text, result.findings))
    seconds = time.perf_counter() - start
    for text, findings in found:
        print(f"  FP [{name}] {findings}: {text[:300]!r}")
    chars = sum(len(t) for t in turns)
    return {"turns": len(turns), "false_positives": len(found), "rate": len(found) / len(turns),
            "seconds_per_turn": seconds / len(turns), "mean_chars": chars / len(turns)}


def recall() -> dict:
    missed: Counter[str] = Counter()
    total = 0
    for kind, secret, text in corpus():
        total += 1
        if not caught(secret, redact(text).text):
            missed[kind] += 1
    return {"samples": total, "formats": len(FORMATS), "caught": total - sum(missed.values()),
            "recall": 1 - sum(missed.values()) / total, "missed": dict(missed)}


def command_lines() -> dict:
    """Passwords on command lines and in short notes (COMMAND_LINES), and their innocent look-alikes (LOOKALIKES):
    which shapes are caught, and which look-alikes are touched (each printed)."""
    missed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for kind, secret, text in command_corpus():
        total[kind] += 1
        if not caught(secret, redact(text).text, piece=8):
            missed[kind] += 1
    touched = []
    for text in LOOKALIKES:
        result = redact(text)
        if result.findings:
            touched.append(text)
            print(f"  LOOKALIKE TOUCHED {result.findings}: {text!r} -> {result.text!r}")
    return {"samples": sum(total.values()), "caught": sum(total.values()) - sum(missed.values()),
            "caught_by_kind": {kind: total[kind] - missed[kind] for kind in total}, "total_by_kind": dict(total),
            "lookalikes": len(LOOKALIKES), "lookalikes_touched": len(touched)}


REDACT_TEXTS = ("import json, sys; from localmem.privacy import redact; "
                "print(json.dumps([redact(t).text for t in json.load(open(sys.argv[1]))]))")


def redacted_by_tree(texts: list[str], tree: Path | None) -> list[str]:
    """Each text as ``redact`` leaves it: this tree's, or ``tree``'s (its code in a process of its own)."""
    if tree is None:
        return [redact(text).text for text in texts]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "texts.json"
        path.write_text(json.dumps(texts))
        done = subprocess.run([sys.executable, "-c", REDACT_TEXTS, str(path)], cwd=tree, check=True,
                              env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True)
    return json.loads(done.stdout)


def heldout(tree: Path | None, samples: list[tuple[str, str, str]] | None = None,
            halves: tuple[tuple[str, ...], tuple[str, ...]] | None = None) -> dict:
    """Recall on a held-out corpus (the first, or ``samples`` halved by ``halves``) per format and per half; one
    missed text of each format printed redacted."""
    samples = list(heldout_corpus()) if samples is None else samples
    outputs = redacted_by_tree([text for _, _, text in samples], tree)
    total: Counter[str] = Counter()
    got: Counter[str] = Counter()
    shown: set[str] = set()
    for (name, secret, _), out in zip(samples, outputs):
        total[name] += 1
        if caught(secret, out, piece=12 if len(secret) >= 24 else 8):
            got[name] += 1
        elif name not in shown:
            shown.add(name)
            print(f"  MISSED [{name}]: {out[:240]!r}")
    report = {half: {"formats": len(names), "samples": sum(total[n] for n in names),
                     "caught": sum(got[n] for n in names),
                     "recall": sum(got[n] for n in names) / sum(total[n] for n in names),
                     "formats_all_caught": sum(got[n] == total[n] for n in names),
                     "per_format": {n: f"{got[n]}/{total[n]}" for n in names}}
              for half, names in zip(("develop", "report"), halves or split()) if names}
    report["all"] = {"formats": len(total), "samples": sum(total.values()), "caught": sum(got.values()),
                     "recall": sum(got.values()) / sum(total.values())}
    return report


def heldout2(tree: Path | None, corpus: int = 2) -> dict:
    """The second held-out corpus's recall per half (as ``heldout``), and its look-alikes touched per half (each
    touched text printed as redacted); ``corpus`` 3: the third corpus's, all of it one half ("report"); 4: the
    fourth's, halved as the second is; 5: the fifth's, the same."""
    if corpus == 3:
        report = heldout(tree, list(heldout3_corpus()), ((), tuple(FORMATS3)))  # no develop half
        kinds_texts, halves = list(lookalike3_corpus()), (("report", tuple(LOOKALIKES3)),)
    elif corpus == 4:
        report = heldout(tree, list(heldout4_corpus()), split4())
        kinds_texts, halves = list(lookalike4_corpus()), tuple(zip(("develop", "report"), split_lookalikes4()))
    elif corpus == 5:
        report = heldout(tree, list(heldout5_corpus()), split5())
        kinds_texts, halves = list(lookalike5_corpus()), tuple(zip(("develop", "report"), split_lookalikes5()))
    else:
        report = heldout(tree, list(heldout2_corpus()), split2())
        kinds_texts, halves = list(lookalike_corpus()), tuple(zip(("develop", "report"), split_lookalikes()))
    outputs = redacted_by_tree([text for _, text in kinds_texts], tree)
    touched: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for (kind, text), out in zip(kinds_texts, outputs):
        total[kind] += 1
        if out != text:
            touched[kind] += 1
            print(f"  LOOKALIKE TOUCHED [{kind}]: {out[:240]!r}")
    for half, kinds in halves:
        report[f"lookalikes {half}"] = {"kinds": len(kinds), "texts": sum(total[k] for k in kinds),
                                        "touched": sum(touched[k] for k in kinds),
                                        "touched_by_kind": {k: touched[k] for k in kinds if touched[k]}}
    return report


def same_answers(tree: Path) -> dict:
    """Per set, how many texts ``tree``'s ``redact`` leaves differently from this tree's (each printed)."""
    sets = {"in-sample corpus": [t for _, _, t in corpus()], "command lines": [t for _, _, t in command_corpus()],
            "look-alikes": list(LOOKALIKES), "corpus 1": [t for _, _, t in heldout_corpus()]}
    for number, samples, looks in ((2, heldout2_corpus, lookalike_corpus), (3, heldout3_corpus, lookalike3_corpus),
                                   (4, heldout4_corpus, lookalike4_corpus), (5, heldout5_corpus, lookalike5_corpus)):
        sets[f"corpus {number}"] = [t for _, _, t in samples()]
        sets[f"corpus {number} look-alikes"] = [t for _, t in looks()]
    sets.update({"locomo-dev": locomo_turns(DATA / "locomo-dev.json"), "lme-dev": lme_turns(DATA / "lme-dev.json")})
    report = {}
    for name, texts in sets.items():
        differ = 0
        for text, theirs, ours in zip(texts, redacted_by_tree(texts, tree), redacted_by_tree(texts, None)):
            if theirs != ours:
                differ += 1
                print(f"  DIFFERS [{name}]: {text[:200]!r}\n    tree: {theirs[:200]!r}\n    this: {ours[:200]!r}")
        report[name] = {"texts": len(texts), "differ": differ}
    return report


def detect_secrets_compare(turns: list[str]) -> dict:
    """detect-secrets' default plugins (each line through every plugin's ``analyze_line``; its
    file-level filters are not run) on the same corpus and turns: recall, turns flagged, seconds per turn."""
    from detect_secrets.settings import default_settings, get_plugins

    with default_settings():
        plugins = get_plugins()

        def hits(text: str) -> list[str]:
            return [s.secret_value for number, line in enumerate(text.splitlines(), 1) for plugin in plugins
                    for s in plugin.analyze_line(filename="turn.txt", line=line, line_number=number)
                    if s.secret_value]

        samples = list(corpus())
        got = sum(1 for _, secret, text in samples
                  if any(secret in value or value in secret for value in hits(text)))
        start = time.perf_counter()
        flagged = sum(1 for text in turns if hits(text))
        seconds = time.perf_counter() - start
    return {"recall": got / len(samples), "false_positive_turns": flagged,
            "seconds_per_turn": seconds / len(turns)}


def paired_store_cost(turns: list[str], count: int, repeats: int = 3) -> dict:
    """Storing the first ``count`` turns no longer than a memory may be (capture splits longer
    ones) as capture does (store_many_checked, dedup on), with and without redaction, alternating
    in one process (hash embedder: the rest of a write is at its cheapest, so the ratio is an
    upper bound of what redaction adds)."""
    import tempfile

    from localmem import MemoryStore
    from localmem.validation import CONTENT_HARD_LIMIT

    turns = [t for t in turns if len(t) <= CONTENT_HARD_LIMIT][:count]
    timings: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(repeats):
            for redacting in ((False, True) if round_ % 2 == 0 else (True, False)):
                with MemoryStore(f"{folder}/{round_}-{redacting}.db", embedder="hash") as store:
                    items = [{"content": t, "metadata": {"session": f"s{i // 20}"}} for i, t in enumerate(turns)]
                    start = time.perf_counter()
                    store.store_many_checked(items, dedup=True, redact=redacting)
                    timings[redacting].append((time.perf_counter() - start) / len(turns))
    plain, redacted = min(timings[False]), min(timings[True])
    return {"turns": len(turns), "seconds_per_turn_plain": plain, "seconds_per_turn_redacted": redacted,
            "ratio": redacted / plain}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--detect-secrets", action="store_true", help="compare with detect-secrets (installed)")
    parser.add_argument("--limit", type=int, default=0, help="turns per set for the detect-secrets cost (0: all)")
    parser.add_argument("--store-turns", type=int, default=0, metavar="N",
                        help="also time storing N LoCoMo turns with and without redaction (paired)")
    parser.add_argument("--heldout", action="store_true",
                        help="recall on the held-out corpus only (benchmarks/common/credential_heldout.py)")
    parser.add_argument("--heldout2", action="store_true",
                        help="recall and look-alikes on the second held-out corpus only (credential_heldout2.py)")
    parser.add_argument("--heldout3", action="store_true",
                        help="recall and look-alikes on the third held-out corpus only (credential_heldout3.py)")
    parser.add_argument("--heldout4", action="store_true",
                        help="recall and look-alikes on the fourth held-out corpus only (credential_heldout4.py)")
    parser.add_argument("--heldout5", action="store_true",
                        help="recall and look-alikes on the fifth held-out corpus only (credential_heldout5.py)")
    parser.add_argument("--tree", type=Path,
                        help="with --heldout, --heldout2 … --heldout5: that tree's redact "
                             "(default: this tree's)")
    parser.add_argument("--same-as", type=Path, metavar="TREE",
                        help="only count the texts of every corpus and dev set TREE's redact leaves differently")
    args = parser.parse_args()
    if args.same_as:
        print(json.dumps(same_answers(args.same_as.resolve()), indent=2))
        return
    corpora = [number for number, asked in ((1, args.heldout), (2, args.heldout2), (3, args.heldout3),
                                            (4, args.heldout4), (5, args.heldout5)) if asked]
    if len(corpora) > 1:
        parser.error("--heldout, --heldout2, --heldout3, --heldout4 and --heldout5 are separate runs: give one")
    if args.tree and not corpora:
        parser.error("--tree goes with --heldout, --heldout2, --heldout3, --heldout4 or --heldout5")
    tree = args.tree.resolve() if args.tree else None
    if corpora:
        print(json.dumps(heldout(tree) if corpora == [1] else heldout2(tree, corpora[0]), indent=2))
        return
    sets = {"locomo-dev": locomo_turns(DATA / "locomo-dev.json"), "lme-dev": lme_turns(DATA / "lme-dev.json")}
    report = {name: false_positives(name, turns) for name, turns in sets.items()}
    report["corpus"] = recall()
    report["command lines"] = command_lines()
    if args.detect_secrets:
        for name, turns in sets.items():
            report[f"detect-secrets {name}"] = detect_secrets_compare(turns[:args.limit] if args.limit else turns)
    if args.store_turns:
        for name, turns in sets.items():
            report[f"paired store, {name}"] = paired_store_cost(turns, args.store_turns)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
