"""A dependency-free progress bar on stderr for long imports."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Prints ``label [#####.....] n/total`` at most ten times a second."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.total = max(0, total)
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.done = 0
        self._last_draw = 0.0

    def advance(self, count: int = 1) -> None:
        self.done = min(self.total, self.done + count)
        now = time.monotonic()
        if now - self._last_draw >= 0.1 or self.done == self.total:
            self._last_draw = now
            self._draw()

    def _draw(self) -> None:
        filled = int(self.width * self.done / self.total) if self.total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total}")
        self.stream.flush()

    def close(self) -> None:
        self._draw()
        self.stream.write("\n")
        self.stream.flush()

    def restart(self, label: str, total: int) -> None:
        """End this bar's line and go on with the next phase of the same job on a new one."""
        self.close()
        self.label, self.total, self.done, self._last_draw = label, max(0, total), 0, 0.0
