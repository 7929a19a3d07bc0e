"""Spans per stage of a call, without a profiler's per-call overhead.

``Spans.wrap(owner, name, label)`` replaces ``owner.name`` (a module's function or a
class's method) with a wrapper that adds the time spent inside it to ``label``;
a call nested in another wrapped call counts for both (the report indents it
under its caller). Each thread nests its own calls: a stage run on another thread
(recall matches token codes on one) is a top-level row. ``restore()`` puts every
original back.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any, Callable


class Spans:
    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock  # time.process_time or thread_time: CPU time, steadier on a loaded machine
        self.total: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self.parent: dict[str, str | None] = {}
        self._local = threading.local()  # each thread's stack of open stages
        self._lock = threading.Lock()
        self._patched: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        function: Callable[..., Any] = original.__func__ if isinstance(original, staticmethod) else original
        spans = self

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            stack = spans._local.__dict__.setdefault("stack", [])
            spans.parent.setdefault(label, stack[-1] if stack else None)
            stack.append(label)
            started = spans.clock()
            try:
                return function(*args, **kwargs)
            finally:
                took = spans.clock() - started
                with spans._lock:
                    spans.total[label] = spans.total.get(label, 0.0) + took
                    spans.calls[label] = spans.calls.get(label, 0) + 1
                stack.pop()

        setattr(owner, name, staticmethod(timed) if isinstance(original, staticmethod) else timed)
        self._patched.append((owner, name, original))

    def restore(self) -> None:
        for owner, name, original in reversed(self._patched):
            setattr(owner, name, original)
        self._patched.clear()

    def table(self, per: int, order: list[str]) -> list[str]:
        """Markdown rows: each stage's milliseconds per ``per`` calls of the whole, its calls
        per whole, nested stages indented under their caller, in ``order``."""
        def depth(label: str) -> int:
            seen, parent = 0, self.parent.get(label)
            while parent is not None and seen < 10:
                seen, parent = seen + 1, self.parent.get(parent)
            return seen

        rows = ["| stage | ms per recall | calls per recall |", "|---|---:|---:|"]
        for label in order:
            if label in self.total:
                rows.append(f"| {'  ' * depth(label)}{'└ ' if depth(label) else ''}{label} | "
                            f"{self.total[label] * 1000 / per:.2f} | {self.calls[label] / per:.1f} |")
        return rows
