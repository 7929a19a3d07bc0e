"""Redaction on technical text no rule was written from: what one tree's rules touch that another's do not.

The dev sets are conversation and hardly hold a command line. This reads texts full of flags, commands and
the words "password"/"pw", none of which holds a real credential: every line of the installed manual pages
(sections 1 and 8, troff source with its escapes undone: ``\\-`` → ``-``, ``\\ `` → `` ``, font changes
dropped), and
capture_noise.py's message shapes (tracebacks, logs, code, diffs, tool output). A line touched by a tree's
rules is a false positive, or a documentation example holding a made-up password; each line touched by one
tree and not the other is printed with both answers, to be read.

    python benchmarks/safety/redaction_heldout.py BEFORE AFTER [--man /usr/share/man]
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


def touched(tree: Path, texts: list[str]) -> dict[int, tuple[dict, str]]:
    """{index: (findings, redacted text)} of the texts ``tree``'s rules touch (its code in a process of its own)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "texts.json"
        path.write_text(json.dumps(texts))
        done = subprocess.run([sys.executable, "-c", REDACT_ALL, str(path)], cwd=tree, check=True,
                              env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True, text=True)
    return {index: (findings, text) for index, findings, text in json.loads(done.stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a tree (its localmem/ is imported)")
    parser.add_argument("after", type=Path, help="another tree")
    parser.add_argument("--man", type=Path, default=Path("/usr/share/man"), help="manual pages' folder")
    args = parser.parse_args()
    sets = {"man pages": man_lines(args.man), "message shapes": [text for _, text in noise_items()]}
    report = {}
    for name, texts in sets.items():
        before, after = touched(args.before.resolve(), texts), touched(args.after.resolve(), texts)
        for index in sorted(set(before) ^ set(after) | {i for i in set(before) & set(after)
                                                          if before[i] != after[i]}):
            print(f"  CHANGED [{name}] before {before.get(index, ({}, ''))[0]} after "
                  f"{after.get(index, ({}, ''))[0]}: {texts[index][:200]!r}")
            if index in after:
                print(f"      after: {after[index][1][:200]!r}")
        report[name] = {"texts": len(texts), "touched_before": len(before), "touched_after": len(after),
                        "only_before": len(set(before) - set(after)), "only_after": len(set(after) - set(before))}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
