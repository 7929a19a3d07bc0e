"""A dependency-free progress bar on stderr for long imports, and work done in steps to feed it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TextIO, TypeVar

T = TypeVar("T")
R = TypeVar("R")

STEP = 64           # items per step of work the bar can show (an embedding batch)
MIN_INTERVAL = 0.1  # seconds between redraws, unless the percentage changed


class ProgressBar:
    """Prints ``label [#####.....] n/total  42%  1.2k/s  ETA 0:12``, redrawn in place.

    Drawn at once (so a slow first step shows ``0/total``), then on every
    change of the whole percentage and at most ten times a second otherwise.
    """

    def __init__(self, total: int, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.total = max(0, total)
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.done = 0
        self._started = time.monotonic()
        self._last_draw = 0.0
        self._last_percent = -1
        self._closed = False
        self._draw()

    def advance(self, count: int = 1) -> None:
        self.done = min(self.total, self.done + max(0, count))
        now = time.monotonic()
        if self._percent() != self._last_percent or now - self._last_draw >= MIN_INTERVAL:
            self._draw()

    def _percent(self) -> int:
        return 100 if not self.total else int(100 * self.done / self.total)

    def _draw(self) -> None:
        self._last_draw = time.monotonic()
        self._last_percent = self._percent()
        filled = int(self.width * self.done / self.total) if self.total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        text = f"\r{self.label} [{bar}] {self.done}/{self.total} {self._last_percent:3d}%"
        elapsed = self._last_draw - self._started
        if self.done and elapsed > 0.5:  # a rate from the first half second is noise
            rate = self.done / elapsed
            text += f"  {_count(rate)}/s"
            if self.done < self.total:
                text += f"  ETA {_clock((self.total - self.done) / rate)}"
        self.stream.write(text + "\x1b[K" if self.stream.isatty() else text)
        self.stream.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._draw()
        self.stream.write("\n")
        self.stream.flush()

    def restart(self, label: str, total: int) -> None:
        """End this bar's line and go on with the next phase of the same job on a new one."""
        self.close()
        self.label, self.total, self.done = label, max(0, total), 0
        self._started = time.monotonic()
        self._last_percent = -1
        self._closed = False
        self._draw()

def _count(value: float) -> str:
    return f"{value / 1000:.1f}k" if value >= 1000 else f"{value:.0f}"


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def in_steps(work: Callable[[list[T]], list[R] | None], items: Sequence[T],
             bar: ProgressBar | None, step: int = STEP) -> list[R] | None:
    """``work(items)`` done ``step`` items at a time, advancing ``bar`` after each step.

    ``work`` returns one result per item, or None when it cannot run (say,
    the embedder is unavailable): then None comes back and no further step runs.
    """
    if bar is None or len(items) <= step:
        results = work(list(items))
        if bar is not None:
            bar.advance(len(items))
        return results
    out: list[R] = []
    for start in range(0, len(items), step):
        part = list(items[start:start + step])
        results = work(part)
        if results is None:
            return None
        out.extend(results)
        bar.advance(len(part))
    return out


class ProgressSteps:
    """``phase`` and ``advance`` on an optional ``ProgressBar`` in ``self.bar`` (a long-running
    job without a bar calls them all the same)."""

    bar: ProgressBar | None

    def phase(self, label: str, total: int) -> None:
        if self.bar is not None:
            self.bar.restart(label, total)

    def advance(self, count: int = 1) -> None:
        if self.bar is not None:
            self.bar.advance(count)
