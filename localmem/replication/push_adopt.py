"""Before a push creates again a memory the server lost, it looks for another store's copy of it there.

Two stores that each changed a memory the server deleted each keep theirs, and each push creates its copy there
again (docs/pull.md, Deletions). When both made the same change the two copies are one memory twice, which every
store then pulls (the stateful model's seed 3055308988). So a push about to create again a memory the server had
before (``remote_origins`` remembers it) asks AutoMem for the memories of its type, importance and time
(``GET /graph/snapshot`` with ``types``, ``min_importance`` and ``since`` a day before its timestamp, as the
look-up of an interrupted push's creates; past ``FILTERED_LOOKUPS`` in one run, one listing of the whole server
serves the rest) and takes one equal in every field it would send (content, own tags, type,
importance, confidence, timestamp, metadata but the ``localmem_id`` marker) that no memory of this store is mapped
to: recorded as this memory's, nothing sent. AutoMem's listing has no ``t_valid`` or ``t_invalid``: a memory with a
``t_invalid``, or a ``t_valid`` other than its timestamp (the default), is created again as before. Copies that
differ in anything are both created, as before. A memory created for the first time is not looked up (a note stored
twice on purpose stays twice).

``localmem serve`` keeps every memory under the id it was sent with, so two stores that share a memory (a sync keeps
ids; serve has no listing a pull could read) send it under one id: a push created again lands there once, and the
second store's push updates it. What serve cannot tell apart is a memory already there under a pushed memory's id
that no push put there (another client stored it, or a sync brought it: it carries no ``localmem_id`` marker): a
create refused with "already exists" looks at it (``served_differences``, one ``GET /memory/{id}``, which shows every
field push sends there) and takes it when it is the same version; one that differs is left, and the memory created
apart under a new id, as before, said in a warning.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ..errors import LocalMemError
from ..timeparse import format_timestamp, parse_timestamp, shifted
from .pull_merge import close_enough, own_tags, same_instant
from .push_client import PushClient
from .push_wire import MARKER, SERVER_METADATA, SERVER_TAG_PREFIX


# A run looks up its first few memories one request each, filtered to their type, importance and time (cheap on a
# large server); past these it lists the server once and matches the rest in memory: at most this many requests
# and one whole listing (what a pull reads) per push, however many memories the server lost.
FILTERED_LOOKUPS = 8
# What AutoMem's listing shows of what push sends, and what only localmem serve keeps (and shows) besides.
SHARED_FIELDS = ("content", "tags", "type", "importance", "confidence", "timestamp", "metadata")
SERVED_FIELDS = ("t_valid", "t_invalid", "summary", "context", "archived", "relevance_score")


class CopyFinder:
    """Finds, for the memories one push run creates again, another store's equal copy on the server (see above)."""

    def __init__(self, client: PushClient) -> None:
        self.client = client
        self.lookups = 0
        self._by_content: dict[str, list[dict[str, Any]]] | None = None  # the whole listing, once fetched
        self._listing_problem: str | None = None

    def find(self, payload: dict[str, Any], taken: Callable[[str], bool]) -> tuple[str | None, str | None]:
        """The server's id of a memory equal to ``payload`` (the ``POST /memory`` body about to be sent) for which
        ``taken`` is false (no memory of this store is mapped to it), and None; or (None, why it could not be looked
        up: the create goes ahead)."""
        self.lookups += 1
        if self.lookups <= FILTERED_LOOKUPS:
            nodes, problem = self._listing(_filters(payload))
        else:
            nodes, problem = self._whole_listing(payload)
        if problem:
            return None, problem
        for node in nodes:
            if isinstance(node, dict) and isinstance(node.get("id"), str) and same_memory(node, payload) \
                    and not taken(node["id"]):
                return node["id"], None
        return None, None

    def _whole_listing(self, payload: dict[str, Any]) -> tuple[list[Any], str | None]:
        if self._by_content is None and self._listing_problem is None:
            nodes, self._listing_problem = self._listing({})
            self._by_content = {}
            for node in nodes:
                if isinstance(node, dict) and isinstance(node.get("content"), str):
                    self._by_content.setdefault(node["content"], []).append(node)
        if self._listing_problem:
            return [], self._listing_problem
        return (self._by_content or {}).get(payload.get("content"), []), None

    def _listing(self, filters: dict[str, Any]) -> tuple[list[Any], str | None]:
        response = self.client.get("/graph/snapshot", limit=0, **filters)
        nodes = response.body.get("nodes", []) if response.ok and isinstance(response.body, dict) else None
        if not isinstance(nodes, list):  # (no "nodes" at all: no memory matched)
            return [], f"GET /graph/snapshot answered {response.status} without a list of nodes"
        return nodes, None


def _filters(payload: dict[str, Any]) -> dict[str, Any]:
    """The listing's filters for one memory: its type, its importance (a float's last digits may differ there: a
    little below) and a day before its timestamp."""
    query: dict[str, Any] = {}
    if payload.get("type"):
        query["types"] = payload["type"]
    if isinstance(payload.get("importance"), (int, float)):
        query["min_importance"] = max(0.0, float(payload["importance"]) - 1e-6)
    try:
        query["since"] = format_timestamp(shifted(parse_timestamp(payload["timestamp"]), -timedelta(days=1)))
    except (LocalMemError, TypeError, ValueError):
        pass  # an unreadable timestamp: the look-up reaches further back
    return query


def same_memory(node: dict[str, Any], payload: dict[str, Any]) -> bool:
    """Whether the server's ``node`` holds what ``payload`` would create (what AutoMem adds itself aside). The listing
    has no ``t_valid`` or ``t_invalid``, and adopted, they would not be sent: a payload with a ``t_invalid``, or a
    ``t_valid`` other than its timestamp (the default), never does."""
    return (payload.get("t_invalid") is None
            and (payload.get("t_valid") is None or same_instant(payload["t_valid"], payload["timestamp"]))
            and not _differences(node, payload, SHARED_FIELDS))


def served_differences(memory: dict[str, Any], payload: dict[str, Any]) -> list[str]:
    """The fields in which ``localmem serve``'s ``memory`` (its ``GET /memory/{id}``, which shows every field push
    sends there) differs from ``payload``, the ``POST /memory`` body about to be sent ([]: the same version)."""
    return _differences(memory, payload, SHARED_FIELDS + SERVED_FIELDS)


def _differences(node: dict[str, Any], payload: dict[str, Any], fields: tuple[str, ...]) -> list[str]:
    return [name for name in fields if not _SAME[name](node, payload)]


_Pair = dict[str, Any]
# Whether the server's node and the payload agree in one field (what AutoMem adds itself aside).
_SAME: dict[str, Callable[[_Pair, _Pair], bool]] = {
    "content": lambda node, payload: node.get("content") == payload["content"],
    "tags": lambda node, payload: (own_tags(_strings(node.get("tags")), SERVER_TAG_PREFIX)
                                   == own_tags(payload["tags"], SERVER_TAG_PREFIX)),
    "type": lambda node, payload: node.get("type") == payload["type"],
    "importance": lambda node, payload: _close(node.get("importance"), payload["importance"]),
    "confidence": lambda node, payload: (payload["confidence"] is None
                                         or _close(node.get("confidence"), payload["confidence"])),
    "timestamp": lambda node, payload: same_instant(node.get("timestamp"), payload["timestamp"]),
    "metadata": lambda node, payload: _own_metadata(node.get("metadata")) == _own_metadata(payload["metadata"]),
    # A memory stored without a t_valid is valid from its timestamp: either spelling is the same version.
    "t_valid": lambda node, payload: same_instant(node.get("t_valid") or node.get("timestamp"),
                                                  payload.get("t_valid") or payload["timestamp"]),
    "t_invalid": lambda node, payload: same_instant(node.get("t_invalid"), payload.get("t_invalid")),
    "summary": lambda node, payload: node.get("summary") == payload.get("summary"),
    "context": lambda node, payload: node.get("context") == payload.get("context"),
    "archived": lambda node, payload: bool(node.get("archived")) == bool(payload.get("archived")),
    "relevance_score": lambda node, payload: _close(node.get("relevance_score"), payload.get("relevance_score")),
}


def _close(theirs: Any, mine: Any) -> bool:
    """``close_enough`` for a value the server answered: one that is not a number (a server that lies: text, a
    list, an integer past a float's range) is another value, never a traceback that stops every push."""
    if theirs is not None and (isinstance(theirs, bool) or not isinstance(theirs, (int, float))
                               or (isinstance(theirs, int) and abs(theirs) > 2 ** 53)):
        return False
    return close_enough(theirs, mine)


def _strings(value: Any) -> list[str]:
    return [t for t in value if isinstance(t, str)] if isinstance(value, list) else []


def _own_metadata(value: Any) -> dict[str, Any] | None:
    """Metadata without the marker and what AutoMem's enrichment adds (None: unreadable)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # a server's text nested past the recursion limit: unreadable
            return None
    if not isinstance(value, dict):
        return None
    return {k: v for k, v in value.items() if k not in SERVER_METADATA and k != MARKER}
