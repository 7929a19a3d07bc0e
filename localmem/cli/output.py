"""Output: results on stdout, notes and errors on stderr; tables that fit the terminal, in colour on one.

Widths are measured in terminal cells, not characters: East Asian wide and
fullwidth characters (CJK, most emoji) take two cells, combining marks and
zero-width joiners none (``unicodedata`` is enough for that). A table gives
its flexible column (the content) the room first: narrow columns are
dropped or shrunk, in an order each table names, before the content is cut.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ..text import visible
from ..validation import strip_non_finite

DEFAULT_TERMINAL_WIDTH = 160  # output to a pipe or file: wide, but still one line per row
MIN_TERMINAL_WIDTH = 40
MIN_FLEX = 30                 # the content column gets at least this much, or half the width
GAP = "  "
ELLIPSIS = "..."
COLOR_CHOICES = ("auto", "always", "never")

# SGR codes by role; the palette stays small so it reads on light and dark terminals.
STYLES = {
    "header": "1",
    "id": "33",
    "dim": "2",
    "tags": "36",
    "good": "32",
    "warn": "33",
    "bad": "31",
    "error": "1;31",
}
_ZERO_WIDTH = {"\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"}


# -- cells ------------------------------------------------------------------------------------


def char_width(char: str) -> int:
    """Terminal cells one character takes: 0, 1 or 2."""
    if unicodedata.combining(char) or char in _ZERO_WIDTH or "\ufe00" <= char <= "\ufe0f":
        return 0
    category = unicodedata.category(char)
    if category in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def cell_width(text: str) -> int:
    """Terminal cells ``text`` takes (ASCII is one per character, fast)."""
    if text.isascii():
        return len(text)
    return sum(char_width(c) for c in text)


def one_line(text: Any) -> str:
    """``text`` on one line: whitespace collapsed, other control characters shown as U+FFFD.

    Stored content can hold anything; an escape sequence must not reach the
    terminal and restyle (or retitle) it.
    """
    return visible(" ".join(str(text if text is not None else "").split()))


def clip(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` cells, ending in ``...`` when cut."""
    if cell_width(text) <= width:
        return text
    if width <= len(ELLIPSIS):
        return _take(text, width)
    return _take(text, width - len(ELLIPSIS)).rstrip() + ELLIPSIS


def _take(text: str, width: int) -> str:
    out, used = [], 0
    for char in text:
        w = char_width(char)
        if used + w > width:
            break
        out.append(char)
        used += w
    return "".join(out)


def short(text: Any, width: int) -> str:
    """One line of at most ``width`` cells (whitespace collapsed, ``...`` when cut)."""
    return clip(one_line(text), width)


def wrap_cells(text: str, width: int, max_lines: int) -> list[str]:
    """``text`` (one line) over at most ``max_lines`` lines of ``width`` cells, broken at spaces
    (a longer word is cut), the last line ending in ``...`` when text is left over."""
    lines: list[str] = []
    current = ""
    words = text.split(" ")
    for index, word in enumerate(words):
        candidate = f"{current} {word}" if current else word
        if cell_width(candidate) <= width:
            current = candidate
            continue
        if current:
            lines.append(current)
        while cell_width(word) > width:
            lines.append(_take(word, width))
            word = word[len(lines[-1]):]
        current = word
        if len(lines) >= max_lines:
            rest = " ".join([current] + words[index + 1:])
            return lines[:max_lines - 1] + [clip(lines[max_lines - 1] + " " + rest, width)]
    if current or not lines:
        lines.append(current)
    if len(lines) > max_lines:
        return lines[:max_lines - 1] + [clip(" ".join(lines[max_lines - 1:]), width)]
    return lines


def fit_items(items: Sequence[str], width: int, sep: str = ", ") -> str:
    """As many whole items as fit in ``width`` cells, then ``+N`` for the rest.

    An item is never cut (``project:sh...`` reads as a different tag): when not even
    the first fits, the cell says only how many there are (``+3``)."""
    if not items:
        return ""
    text = sep.join(items)
    if cell_width(text) <= width:
        return text
    for keep in range(len(items) - 1, 0, -1):
        candidate = sep.join(items[:keep]) + f" +{len(items) - keep}"
        if cell_width(candidate) <= width:
            return candidate
    return clip(f"+{len(items)}", width)


# Tags a table shows first and last: the project says where a memory belongs, while the
# hooks' ``session:<uuid>`` tags are long and alike, and would crowd it out of a narrow column.
_FIRST_TAG_PREFIX = "project:"
_LAST_TAG_PREFIX = "session:"


def display_tags(tags: Sequence[str]) -> list[str]:
    """``tags`` in the order a table shows them: project tags, the rest as stored, session tags."""
    def rank(tag: str) -> int:
        folded = tag.casefold()
        return 0 if folded.startswith(_FIRST_TAG_PREFIX) else 2 if folded.startswith(_LAST_TAG_PREFIX) else 1
    return sorted(tags, key=rank)


# -- the terminal -----------------------------------------------------------------------------


def terminal_width(stream: TextIO | None = None) -> int:
    """Columns to fit: ``$COLUMNS``, else the terminal's width, else a wide default for pipes."""
    columns = os.environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return max(MIN_TERMINAL_WIDTH, int(columns))
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            return max(MIN_TERMINAL_WIDTH, os.get_terminal_size(stream.fileno()).columns)
    except (AttributeError, OSError, ValueError):
        pass
    return DEFAULT_TERMINAL_WIDTH


def use_color(choice: str, stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """``--color``: always, never, or auto (a terminal, unless ``$NO_COLOR`` is set or TERM=dumb)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", "") != "" or env.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# -- tables -----------------------------------------------------------------------------------


@dataclass
class Column:
    """One table column. ``flex`` takes the room left (one per table).

    On a narrow terminal the columns with a ``drop`` rank give way first,
    highest rank first: shrunk to ``least`` cells when they have one, then
    left out, until the flexible column has its share.
    """

    header: str
    right: bool = False
    flex: bool = False
    wrap: int = 1  # the flexible column's text may run over this many lines
    cap: int | None = None
    least: int | None = None
    drop: int = 0
    style: str | Callable[[str], str | None] | None = None


Cell = str | Sequence[str]  # a list of strings is fitted as whole items (tags)


def _plain(cell: Cell) -> str:
    return cell if isinstance(cell, str) else ", ".join(cell)


def layout(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int) -> list[int | None]:
    """Each column's width in cells, or None for a column left out."""
    natural: list[int] = []
    for i, col in enumerate(columns):
        w = max([cell_width(col.header)] + [cell_width(_plain(r[i])) for r in rows])
        natural.append(min(w, max(col.cap, cell_width(col.header))) if col.cap else w)
    widths: list[int | None] = list(natural)
    flex = next(i for i, c in enumerate(columns) if c.flex)

    def room() -> int:
        shown = [w for i, w in enumerate(widths) if w is not None and i != flex]
        return width - sum(shown) - len(GAP) * len(shown)

    target = min(natural[flex], max(MIN_FLEX, width // 2))
    for i in sorted((i for i, c in enumerate(columns) if c.drop), key=lambda i: -columns[i].drop):
        if room() >= target:
            break
        col, current = columns[i], widths[i]
        if col.least is not None and current is not None and current > col.least:
            widths[i] = max(col.least, current - (target - room()))
            if room() >= target:
                break
        widths[i] = None
    widths[flex] = max(1, min(natural[flex], room()))
    # A column of items (tags) shows each row's first item whole where the flex column can
    # spare the cells beyond its target: "project:shopping-list +1" rather than "+2".
    for i, col in enumerate(columns):
        current = widths[i]
        if current is None or i == flex:
            continue
        firsts = [cell_width(r[i][0]) + (len(f" +{len(r[i]) - 1}") if len(r[i]) > 1 else 0)
                  for r in rows if not isinstance(r[i], str) and r[i]]
        spare = min(max(firsts, default=0), col.cap or width) - current
        spare = min(spare, widths[flex] - target)
        if spare > 0:
            widths[i], widths[flex] = current + spare, widths[flex] - spare
    return widths


def render_table(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], *, width: int | None = None,
                 paint: Callable[[str, str | None], str] | None = None) -> list[str]:
    """Aligned rows under a header, no line wider than ``width`` cells (the terminal's by default)."""
    widths = layout(columns, rows, width or terminal_width())
    paint = paint or (lambda text, role: text)
    lines = []
    for index, row in enumerate([[c.header for c in columns]] + [list(r) for r in rows]):
        cells: list[list[str]] = []  # each shown column's lines, padded to its width
        for col, w, cell in zip(columns, widths, row):
            if w is None:
                continue
            if index == 0:
                texts, role = [clip(cell, w)], "header"
            elif isinstance(cell, str) and col.wrap > 1:
                texts = wrap_cells(cell, w, col.wrap)
                role = col.style(cell) if callable(col.style) else col.style
            else:
                texts = [fit_items(cell, w) if not isinstance(cell, str) else clip(cell, w)]
                role = col.style(texts[0]) if callable(col.style) else col.style
            cells.append([(" " * (w - cell_width(t)) + paint(t, role)) if col.right
                          else paint(t, role) + " " * (w - cell_width(t)) for t in texts])
        shown = [w for w in widths if w is not None]
        for depth in range(max(len(c) for c in cells)):
            lines.append(GAP.join(c[depth] if depth < len(c) else " " * w
                                  for c, w in zip(cells, shown)).rstrip())
    return lines


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, flex: int,
          caps: dict[int, int] | None = None, right: Iterable[int] = (),
          width: int | None = None) -> list[str]:
    """A plain table by column index (the older call): column ``flex`` gets the room, ``caps`` cap others."""
    caps, right = dict(caps or {}), set(right)
    columns = [Column(h, right=i in right, flex=i == flex, cap=caps.get(i)) for i, h in enumerate(headers)]
    return render_table(columns, rows, width=width)


# -- values -----------------------------------------------------------------------------------


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
    """Where a command writes: stdout for results, stderr for notes and errors.

    ``color`` is the ``--color`` choice; each stream is coloured only when
    that choice allows it for that stream (so ``2>log`` keeps the log plain).
    """

    def __init__(self, as_json: bool, stdout: TextIO | None = None, stderr: TextIO | None = None,
                 color: str = "auto", *, width: int | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        # width, environ: another process's terminal (a warm process answering for its client)
        self.as_json = as_json
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.color = use_color(color, self.stdout, environ) and not as_json
        self.color_stderr = use_color(color, self.stderr, environ)
        self._width = width

    @property
    def width(self) -> int:
        return self._width if self._width is not None else terminal_width(self.stdout)

    def paint(self, text: str, role: str | None) -> str:
        """``text`` in the colour of ``role`` when stdout is coloured."""
        return _sgr(text, role) if self.color else text

    def table(self, columns: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> list[str]:
        return render_table(columns, rows, width=self.width, paint=self.paint)

    def wrap(self, text: str, role: str | None = None) -> list[str]:
        """A note or summary as lines that fit the terminal (continuations indented), painted."""
        lines = textwrap.wrap(text, width=self.width, subsequent_indent="  ", break_on_hyphens=False,
                              break_long_words=True) or [""]
        return [self.paint(line, role) for line in lines]

    def line(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def lines(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.line(text)

    def json(self, value: Any) -> None:
        self.stdout.write(json_text(value) + "\n")

    def note(self, text: str) -> None:
        """A line on stderr; its ``error:``/``warning:`` label in red/yellow on a coloured terminal."""
        if self.color_stderr:
            for label, role in (("error:", "error"), ("warning:", "warn")):
                if text.startswith(label):
                    text = _sgr(label, role) + text[len(label):]
                    break
        self.stderr.write(text + "\n")


def _sgr(text: str, role: str | None) -> str:
    code = STYLES.get(role or "")
    return f"\x1b[{code}m{text}\x1b[0m" if code and text else text


def counts_text(counts: dict[str, int]) -> str:
    """``3 created, 1 updated, 0 failed``: a summary's counts, in their order."""
    return ", ".join(f"{value} {name}" for name, value in counts.items())
