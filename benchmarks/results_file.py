"""Writing one benchmark's section of benchmarks/RESULTS.md, leaving the others alone."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = (
    "# localmem benchmarks\n\n"
    "Each script in `benchmarks/` writes its own section below, between its\n"
    "`<!-- name:start -->` / `<!-- name:end -->` markers, and leaves the rest alone.\n"
    "The machine is shared and noisy: compare ratios to the same-run baselines,\n"
    "not absolute rates across runs.\n"
)


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace the text between ``<!-- name:start -->`` and ``<!-- name:end -->`` (or append it)."""
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    text = path.read_text("utf-8") if path.exists() else HEADER
    block = f"{start}\n{body.rstrip()}\n{end}"
    if start in text and end in text and text.index(start) < text.index(end):
        before, rest = text.split(start, 1)
        text = before + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, "utf-8")


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
