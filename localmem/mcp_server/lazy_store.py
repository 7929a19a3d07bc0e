"""``LazyStore``: the MCP server's store, opened on first use or by a warm-up thread.

It imports nothing of the MCP SDK, so ``localmem mcp`` can start the warm-up
(open the store, load the models: ``MemoryStore.warm_up``) before it imports
the SDK, whose import is the larger part of the server's start: the two
overlap, and the client's first tool call finds the models loaded.

When the store's warm process runs (``localmem.daemon``), ``use_warm_process``
sends the tool calls there instead and nothing is opened here; once it is
gone, the calls are answered here (the store opened on the first of them).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import MemoryStore

log = logging.getLogger("localmem.mcp")

# How long closing waits for a warm-up still loading: a thread ended mid-load by the
# interpreter's exit can abort the process (onnxruntime's threads).
WARM_UP_JOIN_SECONDS = 60
TOOL_DEADLINE = 120.0  # a tool call answered by the warm process (a large recall, a bulk store)


class ForwardedOutput:
    """A tool's output as the warm process sent it (what ``handlers.ToolOutput`` carries)."""

    def __init__(self, texts: list[str], structured: dict[str, Any] | None, is_error: bool) -> None:
        self.texts, self.structured, self.is_error = texts, structured, is_error


class LazyStore:
    """Creates the store on first use (thread-safe); a failed open is retried on the next use."""

    def __init__(self, factory: Callable[[], MemoryStore]) -> None:
        self._factory = factory
        self._open_lock = threading.Lock()  # held while the factory runs (maybe seconds)
        self._warm_lock = threading.Lock()  # never held for long: taken on the event loop
        self._store: MemoryStore | None = None
        self._warm_up: threading.Thread | None = None
        self._warm_process: tuple[str, str] | None = None  # (store path, embedder) while one answers
        self._start_later: tuple[str, str] | None = None  # the warm process to start after the warm-up

    def use_warm_process(self, db: str, embedder: str) -> bool:
        """Answer tool calls through the store's warm process if one runs now (True); else start
        one once this process's own warm-up is done, for the next client (False)."""
        from ..daemon import client, rundir

        if db == ":memory:" or not rundir.enabled():
            return False
        try:
            client.ask(db, "status", {}, deadline=time.monotonic() + 1.0)
        except client.NotRunning as exc:
            log.info("localmem MCP: answering in-process: %s", exc)
            self._start_later = (db, embedder)
            return False
        except client.Failed:
            return False
        self._warm_process = (db, embedder)
        return True

    def call(self, local: Callable[..., Any], name: str, arguments: Any) -> Any:
        """``local(self.get, name, arguments)``, or the warm process's answer while it runs."""
        target = self._warm_process
        if target is not None:
            from ..daemon import client

            try:
                result = client.ask(target[0], "mcp", {"name": name, "arguments": arguments},
                                    deadline=time.monotonic() + TOOL_DEADLINE, embedder=target[1])
                if (isinstance(result, dict) and isinstance(result.get("texts"), list)
                        and all(isinstance(t, str) for t in result["texts"])):
                    return ForwardedOutput(result["texts"], result.get("structured"), bool(result.get("is_error")))
                log.warning("localmem MCP: the warm process answered %s malformed; answering in-process", name)
            except (client.NotRunning, client.Failed) as exc:
                log.warning("localmem MCP: answering in-process from now on: %s", exc)
            self._warm_process = None
        return local(self.get, name, arguments)

    @property
    def opened(self) -> bool:
        return self._store is not None

    @property
    def forwarding(self) -> bool:
        """Tool calls go to the store's warm process."""
        return self._warm_process is not None

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
        later = self._start_later
        if later is not None:  # after this warm-up: on a small machine the two would share the cores
            from ..daemon import client

            try:
                log.info("localmem MCP: %s", client.start(later[0], embedder=later[1]))
            except client.NotRunning as exc:
                log.info("localmem MCP: %s", exc)

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
