"""``LazyStore``: the MCP server's store, opened on first use or by a warm-up thread.

It imports nothing of the MCP SDK, so ``localmem mcp`` can start the warm-up
(open the store, load the models: ``MemoryStore.warm_up``) before it imports
the SDK, whose import is the larger part of the server's start: the two
overlap, and the client's first tool call finds the models loaded.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import MemoryStore

log = logging.getLogger("localmem.mcp")

# How long closing waits for a warm-up still loading: a thread ended mid-load by the
# interpreter's exit can abort the process (onnxruntime's threads).
WARM_UP_JOIN_SECONDS = 60


class LazyStore:
    """Creates the store on first use (thread-safe); a failed open is retried on the next use."""

    def __init__(self, factory: Callable[[], MemoryStore]) -> None:
        self._factory = factory
        self._open_lock = threading.Lock()  # held while the factory runs (maybe seconds)
        self._warm_lock = threading.Lock()  # never held for long: taken on the event loop
        self._store: MemoryStore | None = None
        self._warm_up: threading.Thread | None = None

    @property
    def opened(self) -> bool:
        return self._store is not None

    def get(self) -> MemoryStore:
        store = self._store
        if store is not None:
            return store
        with self._open_lock:
            if self._store is None:
                self._store = self._factory()
            return self._store

    def start_warm_up(self) -> None:
        """Open the store and load the models in a daemon thread (once, without blocking)."""
        with self._warm_lock:
            if self._warm_up is not None or self._store is not None:
                return
            self._warm_up = threading.Thread(target=self._warm, name="localmem-mcp-warm-up", daemon=True)
            self._warm_up.start()

    def _warm(self) -> None:
        try:
            self.get().warm_up()
        except Exception as exc:  # reported again, as a tool error, by the next tool call
            log.warning("localmem MCP warm-up: %s: %s", type(exc).__name__, exc)

    def close(self, wait: float = WARM_UP_JOIN_SECONDS) -> bool:
        """Close the store, once a warm-up still under way has finished (waiting up to ``wait``
        seconds). False, leaving the store to the warm-up, when it is still loading then."""
        with self._warm_lock:
            warming = self._warm_up
        if warming is not None and warming is not threading.current_thread():
            warming.join(wait)
            if warming.is_alive():
                return False
        with self._open_lock:
            store, self._store = self._store, None
        if store is not None:
            store.close()
        return True
