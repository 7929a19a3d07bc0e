"""Output: results on stdout, notes and errors on stderr; tables and sizes for people."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from ..validation import strip_non_finite

DEFAULT_TERMINAL_WIDTH = 160


def terminal_width() -> int:
    """The terminal's width; ``$COLUMNS`` or a generous default when output is piped."""
    return max(60, shutil.get_terminal_size((DEFAULT_TERMINAL_WIDTH, 24)).columns)


def short(text: Any, width: int) -> str:
    """One line of at most ``width`` characters (whitespace collapsed, ``...`` when cut)."""
    value = " ".join(str(text if text is not None else "").split())
    if len(value) <= width:
        return value
    if width <= 3:
        return value[:width]
    return value[: width - 3].rstrip() + "..."


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, flex: int,
          caps: dict[int, int] | None = None, right: Iterable[int] = (),
          width: int | None = None) -> list[str]:
    """Aligned columns; column ``flex`` shrinks to fit the terminal, ``caps`` cap others."""
    caps = dict(caps or {})
    right = set(right)
    count = len(headers)
    widths = [max([len(headers[i])] + [len(r[i]) for r in rows]) for i in range(count)]
    for index, cap in caps.items():
        widths[index] = min(widths[index], max(cap, len(headers[index])))
    total = width or terminal_width()
    fixed = sum(w for i, w in enumerate(widths) if i != flex) + 2 * (count - 1)
    widths[flex] = max(len(headers[flex]), min(widths[flex], max(20, total - fixed)))
    lines = []
    for row in [list(headers)] + [list(r) for r in rows]:
        cells = []
        for i, cell in enumerate(row):
            cell = short(cell, widths[i]) if len(cell) > widths[i] else cell
            cells.append(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]))
        lines.append("  ".join(cells).rstrip())
    return lines


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # unreachable


def json_text(value: Any) -> str:
    # The store's answers are finite already; this is the last line for anything else printed.
    return json.dumps(strip_non_finite(value), ensure_ascii=False, indent=2, allow_nan=False)


class Output:
    """Where a command writes: stdout for results, stderr for notes and errors."""

    def __init__(self, as_json: bool, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.as_json = as_json
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr

    def line(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def lines(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.line(text)

    def json(self, value: Any) -> None:
        self.stdout.write(json_text(value) + "\n")

    def note(self, text: str) -> None:
        self.stderr.write(text + "\n")
