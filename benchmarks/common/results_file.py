"""Writing one benchmark's section of docs/results/history.md, leaving the others alone."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results" / "history.md"
HEADER = (
    "# localmem benchmarks\n\n"
    "Each script in `benchmarks/` writes its own section below, between its\n"
    "`<!-- name:start -->` / `<!-- name:end -->` markers, and leaves the rest alone.\n"
    "The machine is shared and noisy: compare ratios to the same-run baselines,\n"
    "not absolute rates across runs.\n"
)


CONTENTS_START, CONTENTS_END = "<!-- contents:start -->", "<!-- contents:end -->"


def heading_anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def with_contents(text: str) -> str:
    """``text`` with its contents list (every ``## `` heading, linked) rewritten between the
    contents markers; a file without them gets the list after its opening paragraph."""
    seen: dict[str, int] = {}
    entries = []
    for title in re.findall(r"^## (.+)$", text, re.MULTILINE):
        anchor = heading_anchor(title)
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        entries.append(f"- [{title.strip()}](#{anchor}{f'-{count}' if count else ''})")
    block = f"{CONTENTS_START}\nContents:\n\n" + "\n".join(entries) + f"\n{CONTENTS_END}"
    if CONTENTS_START in text and CONTENTS_END in text:
        before, rest = text.split(CONTENTS_START, 1)
        return before + block + rest.split(CONTENTS_END, 1)[1]
    head, sep, tail = text.partition("\n<!-- ")  # before the first section
    return head.rstrip("\n") + "\n\n" + block + "\n\n" + (sep.lstrip("\n") + tail if sep else "")


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` (or append it),
    and bring the contents list at the top up to date."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = path.read_text("utf-8") if path.exists() else HEADER
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text and text.index(start) < text.index(end):
        before, rest = text.split(start, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(with_contents(text), "utf-8")


if __name__ == "__main__":
    # Sections added by hand: `python benchmarks/common/results_file.py` rewrites the contents list.
    RESULTS.write_text(with_contents(RESULTS.read_text("utf-8")), "utf-8")


def git_revision() -> str:
    """The checked-out commit, marked when localmem/ has uncommitted changes."""
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "localmem"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.strip()
        return f"{sha}{' + uncommitted changes under localmem/' if dirty else ''}"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
