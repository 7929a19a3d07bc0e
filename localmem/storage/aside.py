"""Work started on another thread while the caller goes on: recall encodes the query and matches
token codes (onnxruntime's run and numpy's product let go of the GIL) while it reads the store,
whose connection stays on the caller's thread.

The threads live as long as the store (``AsideThreads``): starting a thread per call cost about
0.1 ms at the median and, on a busy machine, up to ~4 ms while ``Thread.start`` waited for the new
thread to be scheduled, twice per recall (benchmarks/speed/recall_profile.py)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

# A recall has at most one piece of work aside at a time (the query's encoding, then its
# token matches); two let a second store user's recall overlap without queueing.
ASIDE_THREADS = 2
THREAD_NAME = "localmem-aside"


class AsideThreads:
    """A store's threads for work aside, started on first use and ended by ``close``."""

    def __init__(self, size: int = ASIDE_THREADS) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def submit(self, work: Callable[..., Any], *args: Any) -> Callable[[], Any]:
        """Start ``work(*args)`` on one of the threads; the function returned waits for it
        and gives its result, or raises what it raised."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._size, thread_name_prefix=THREAD_NAME)
            try:
                future = self._pool.submit(work, *args)
            except RuntimeError:  # the interpreter is exiting and takes no new work: do it here
                return _done_here(work, args)
        return future.result

    def close(self) -> None:
        """End the threads once their work is done (a later ``submit`` starts new ones)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False)


def _done_here(work: Callable[..., Any], args: tuple[Any, ...]) -> Callable[[], Any]:
    """``work(*args)`` done on this thread now, its result or its exception given when asked."""
    try:
        value = work(*args)
    except Exception as exc:
        error = exc  # ``exc`` is unbound once the handler ends

        def fail() -> Any:
            raise error
        return fail
    return lambda: value
