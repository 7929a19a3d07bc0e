"""AutoMem's enrichment and a push's PATCH of tags or metadata.

AutoMem enriches each memory it stores once, in a background worker (one memory at a time): it
reads the memory, works on it (temporal links, patterns, neighbours), then writes the memory's
tags and metadata back from what it read, with its entity tags and enrichment metadata added,
and marks it ``processed``. A PATCH of the tags or the metadata that lands between that read and
that write is lost, though the server answered 200: on the real server, 9 of 30 tag edits pushed
right after the memory's create were undone so (the second pass of ``update_memories``, which
patches memories created moments before in the same push, lands there too). The next pull would
then take the old tags back as the server's change.

So before such a PATCH push waits, bounded in time, until the server holds nothing that can
rewrite the memory: ``GET /memory/{id}`` says ``processed``, or ``/health`` says the enrichment
queue is empty and nothing is in flight (a memory whose enrichment failed for good). A memory
still waiting when the run's budget (``WAIT_SECONDS``) is spent is sent anyway and named in a
warning: its tags and metadata are not confirmed. A server that reports no ``processed`` field
(``localmem serve``) or no running enrichment worker is not waited for. A recall's just-in-time
enrichment of a memory not yet enriched rewrites the same two fields and is not guarded
(docs/push.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .push_client import PushClient, Response

WAIT_SECONDS = 30.0  # per push run, in total
POLL_SECONDS = 0.05


def _memory(response: Response) -> dict[str, Any] | None:
    body = response.body
    if response.ok and isinstance(body, dict) and isinstance(body.get("memory"), dict):
        return body["memory"]
    return None


def _unsettled(response: Response) -> bool:
    """Whether AutoMem may still rewrite this memory's tags and metadata (stored, not yet processed)."""
    memory = _memory(response)
    return memory is not None and memory.get("processed") is False


class EnrichmentWait:
    """Waits, within one budget per push, for AutoMem to finish enriching memories about to be patched."""

    def __init__(self, client: PushClient, health: Any, *, budget: float = WAIT_SECONDS,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        enrichment = health.get("enrichment") if isinstance(health, dict) else None
        self.client = client
        self.active = isinstance(enrichment, dict) and enrichment.get("status") == "running"
        self.budget = budget
        self.clock = clock
        self.sleep = sleep
        self.waited = 0.0
        self.settled: list[str] = []  # local ids waited for, then sent safely
        self.unconfirmed: list[str] = []  # local ids sent while the server might still rewrite them

    def _queue_empty(self) -> bool:
        response = self.client.get("/health")
        body = response.body if response.ok and isinstance(response.body, dict) else {}
        info = body.get("enrichment") if isinstance(body.get("enrichment"), dict) else None
        return info is not None and not (info.get("pending") or info.get("inflight") or info.get("queue_depth"))

    def current(self, local_id: str, path: str, response: Response) -> Response:
        """The server's memory at ``path`` (``response``: its first read) once nothing can rewrite it,
        read again; or as last read, when the budget ran out (``local_id`` is then named)."""
        if not self.active or not _unsettled(response):
            return response
        started, polls = self.clock(), 0
        while _unsettled(response) and not self._queue_empty():
            if self.waited + (self.clock() - started) >= self.budget:
                self.waited += self.clock() - started
                self.unconfirmed.append(local_id)
                return response
            self.sleep(POLL_SECONDS)
            polls += 1
            response = self.client.get(path)
        self.waited += self.clock() - started
        if polls:
            self.settled.append(local_id)
        return response

    def notes(self) -> list[str]:
        out = []
        if self.settled:
            out.append(f"waited {self.waited:.1f} s for AutoMem to finish enriching {len(self.settled)} memories "
                       "before sending their tags or metadata (its enrichment rewrites both from what it read "
                       "before; such as " + ", ".join(self.settled[:5]) + ")")
        if self.unconfirmed:
            out.append(f"{len(self.unconfirmed)} memories' tags or metadata were sent while AutoMem was still "
                       f"enriching them, after waiting {self.budget:g} s in all (such as "
                       + ", ".join(self.unconfirmed[:5]) + "): not confirmed, its enrichment may undo them; "
                       "`localmem push --verify` compares")
        return out
