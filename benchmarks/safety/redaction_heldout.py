"""Redaction on technical text no rule was written from: what one tree's rules touch that another's do not.

The dev sets are conversation and hardly hold a command line. This reads texts full of flags, commands and
the words "password"/"pw", none of which holds a real credential: every line of the installed manual pages
(sections 1 and 8, troff source with its escapes undone: ``\\-`` → ``-``, ``\\ `` → `` ``, font changes
dropped), and
capture_noise.py's message shapes (tracebacks, logs, code, diffs, tool output). A line touched by a tree's
rules is a false positive, or a documentation example holding a made-up password; each line touched by one
tree and not the other is printed with both answers, to be read.

Each set is also fed as consecutive pairs (the message before as context, as capture gives ``redact_after`` the
session's previous captured message): the LoCoMo and LongMemEval dev sessions' turns in order (each distinct
pair once), consecutive manual-page lines, consecutive message shapes. A tree without ``redact_after`` redacts
the second text alone.

    python benchmarks/safety/redaction_heldout.py BEFORE AFTER [--man /usr/share/man] [--no-pairs]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.hooks.capture_noise import noise_items  # noqa: E402

_TROFF_FONT = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)")
_TROFF_REQUEST = re.compile(r"^\.[A-Za-z]{1,3}\s?")
REDACT_ALL = ("import json, sys; from localmem.privacy import redact; texts = json.load(open(sys.argv[1]));"
              "print(json.dumps([[i, redact(t).findings, redact(t).text] for i, t in enumerate(texts)"
              " if redact(t).findings]))")
REDACT_PAIRS = ("import json, sys\ntry:\n from localmem.privacy import redact_after\nexcept ImportError:\n"
                " from localmem.privacy import redact\n def redact_after(p, t): return redact(t, private=False)\n"
                "pairs = json.load(open(sys.argv[1])); out = []\n"
                "for i, (p, t) in enumerate(pairs):\n r = redact_after(p, t)\n"
                " if r.findings: out.append([i, r.findings, r.text])\nprint(json.dumps(out))")
DATA = ROOT.parent / "shared" / "data"


def man_lines(folder: Path) -> list[str]:
    """Each distinct non-empty line of the section 1 and 8 manual pages, troff escapes undone."""
    seen: dict[str, None] = {}
    for section in ("man1", "man8"):
        for page in sorted((folder / section).glob("*.gz")):
            try:
                source = gzip.decompress(page.read_bytes()).decode("utf-8", "replace")
            except (OSError, EOFError):
                continue
            for line in source.splitlines():
                line = _TROFF_FONT.sub("", _TROFF_REQUEST.sub("", line)).replace("\\-", "-").replace("\\(aq", "'")
                line = line.replace("\\e", "\\").replace("\\&", "").replace("\\ ", " ").strip()
                if line and not line.startswith(('.\\"', "'\\\"")):
                    seen.setdefault(line, None)
    return list(seen)


def in_order(sessions: list[list[str]]) -> list[list[str | None]]:
    """Each distinct (previous turn, turn) of the sessions, the first turn of each after None."""
    seen: dict[tuple[str | None, str], None] = {}
    for session in sessions:
        for previous, text in zip([None] + session[:-1], session):
            seen.setdefault((previous, text), None)
    return [list(pair) for pair in seen]


def dev_sessions() -> dict[str, list[list[str]]]:
    """The LoCoMo and LongMemEval dev sets' sessions, each a list of its turns' texts in order."""
    locomo = [[t["text"] for t in session if isinstance(t.get("text"), str)]
              for sample in json.loads((DATA / "locomo-dev.json").read_text())
              for key, session in sample["conversation"].items()
              if key.startswith("session_") and isinstance(session, list)]
    lme = [[t["content"] for t in session if isinstance(t.get("content"), str)]
           for instance in json.loads((DATA / "lme-dev.json").read_text())["instances"]
           for session in instance["haystack_sessions"]]
    return {"locomo-dev pairs": locomo, "lme-dev pairs": lme}


def touched(tree: Path, texts: list) -> dict[int, tuple[dict, str]]:
    """{index: (findings, redacted text)} of the texts ``tree``'s rules touch (its code in a process of its own);
    texts that are pairs are redacted by ``redact_after``."""
    pairs = bool(texts) and isinstance(texts[0], list)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "texts.json"
        path.write_text(json.dumps(texts))
        done = subprocess.run([sys.executable, "-c", REDACT_PAIRS if pairs else REDACT_ALL, str(path)], cwd=tree,
                              check=True,
                              env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True)
    return {index: (findings, text) for index, findings, text in json.loads(done.stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a tree (its localmem/ is imported)")
    parser.add_argument("after", type=Path, help="another tree")
    parser.add_argument("--man", type=Path, default=Path("/usr/share/man"), help="manual pages' folder")
    parser.add_argument("--no-pairs", action="store_true", help="texts alone only")
    args = parser.parse_args()
    sets: dict[str, list] = {"man pages": man_lines(args.man), "message shapes": [text for _, text in noise_items()]}
    if not args.no_pairs:
        sets.update({name: in_order(sessions) for name, sessions in dev_sessions().items()})
        sets.update({f"{name} pairs": in_order([texts]) for name, texts in list(sets.items())[:2]})
    report = {}
    for name, texts in sets.items():
        before, after = touched(args.before.resolve(), texts), touched(args.after.resolve(), texts)
        for index in sorted(set(before) ^ set(after) | {i for i in set(before) & set(after)
                                                          if before[i] != after[i]}):
            print(f"  CHANGED [{name}] before {before.get(index, ({}, ''))[0]} after "
                  f"{after.get(index, ({}, ''))[0]}: {texts[index]!r:.300}")
            if index in after:
                print(f"      after: {after[index][1][:200]!r}")
        report[name] = {"texts": len(texts), "touched_before": len(before), "touched_after": len(after),
                        "only_before": len(set(before) - set(after)), "only_after": len(set(after) - set(before))}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
