"""Work started on another thread while the caller goes on: recall encodes the query and matches
token codes (onnxruntime's run and numpy's product let go of the GIL) while it reads the store,
whose connection stays on the caller's thread."""

from __future__ import annotations

import threading
from typing import Any, Callable


def on_a_thread(work: Callable[..., Any], *args: Any, name: str = "localmem-aside") -> Callable[[], Any]:
    """Start ``work(*args)`` on a new thread; the function returned waits for it and gives its
    result, or raises what it raised."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, work(*args)))
        except BaseException as exc:  # handed to the caller, raised on its thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()

    def result() -> Any:
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value
    return result
