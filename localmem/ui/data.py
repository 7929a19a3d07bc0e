"""What the memory browser shows, composed from the store's own methods.

Every read goes through ``MemoryStore`` (recall, get, related,
list_memories, resolve_id) or, for the few views the store has no method for (tag tree,
timeline, most connected memories, edges among a neighbourhood), through
``storage.browse`` inside one read snapshot under the store's lock.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any, TypeVar

from ..classify import MEMORY_TYPES
from ..errors import ValidationError
from ..relations import AUTHORABLE_TYPES, RELATION_TYPES, SUPERSESSION_TYPES
from ..storage import browse
from ..storage.database import read_transaction
from ..store import MemoryStore
from ..validation import validate_int

T = TypeVar("T")

TAG_VOCABULARY_LIMIT = 5000
CHAIN_LIMIT = 50  # supersession chains are short; this bounds a damaged one
SIMILAR_LIMIT = 5
RECALL_LIMIT = 50
GRAPH_LIMIT = 150


def _read(store: MemoryStore, fn: Callable[[Any, Any], T]) -> T:
    """``fn(conn, sql)`` in one read snapshot, serialized with the store's other calls."""
    with store.lock, read_transaction(store.conn):
        return fn(store.conn, store.sql)


def vocabulary() -> dict[str, Any]:
    """The fixed choices the page offers: memory types, relation types, state modes."""
    return {"memory_types": list(MEMORY_TYPES), "relation_types": sorted(RELATION_TYPES),
            "authorable_relation_types": list(AUTHORABLE_TYPES),
            "supersession_types": list(SUPERSESSION_TYPES), "state_modes": ["current", "history"]}


def tag_counts(store: MemoryStore) -> list[tuple[str, int]]:
    """Every tag and tag prefix (``a:b`` for tag ``a/b`` or ``a:b``) with its memory count."""
    return _read(store, lambda conn, sql: [
        (row[0], int(row[1])) for row in conn.execute(
            sql["kagura_tag_vocabulary"], {"contexts": None, "limit": TAG_VOCABULARY_LIMIT})])


def tag_completions(store: MemoryStore, prefix: str, limit: Any = 20) -> list[dict[str, Any]]:
    """Tags and prefixes starting with ``prefix`` (case-insensitive), most used first."""
    if not isinstance(prefix, str) or len(prefix) > 200:
        raise ValidationError("'prefix' must be a string of at most 200 characters")
    limit = validate_int(limit, "limit", default=20, minimum=1, maximum=200)
    wanted = prefix.strip().lower().replace("/", ":")
    found = [{"tag": tag, "count": count} for tag, count in tag_counts(store) if tag.startswith(wanted)]
    return found[:limit]


def tag_tree(store: MemoryStore) -> list[dict[str, Any]]:
    """The tag prefixes as a tree: ``[{"tag", "name", "count", "children"}]``, by name."""
    nodes: dict[str, dict[str, Any]] = {}
    for tag, count in sorted(tag_counts(store)):
        nodes[tag] = {"tag": tag, "name": tag.rsplit(":", 1)[-1], "count": count, "children": []}
    roots: list[dict[str, Any]] = []
    for tag, node in nodes.items():
        parent = nodes.get(tag.rsplit(":", 1)[0]) if ":" in tag else None
        (parent["children"] if parent is not None else roots).append(node)
    return roots


def timeline(store: MemoryStore, unit: Any = "day") -> dict[str, Any]:
    """Memories made per day or per ISO week (``YYYY-MM-DD`` of its Monday), oldest first."""
    if unit not in ("day", "week"):
        raise ValidationError("'unit' must be 'day' or 'week'")
    buckets: dict[str, int] = {}
    for day, count in _read(store, browse.memories_per_day):
        try:
            when = date.fromisoformat(day)
        except ValueError:
            continue  # a damaged timestamp: doctor reports it, the chart skips it
        if unit == "week":
            when -= timedelta(days=when.weekday())
        key = when.isoformat()
        buckets[key] = buckets.get(key, 0) + count
    return {"unit": unit, "buckets": [{"start": k, "count": v} for k, v in sorted(buckets.items())]}


def contexts(store: MemoryStore) -> list[dict[str, Any]]:
    from ..maintenance.stats import collect_stats

    return [{"context": name, "count": count}
            for name, count in collect_stats(store, 0)["contexts"].items()]


def list_page(store: MemoryStore, *, limit: Any = 20, offset: Any = 0, tag: str | None = None,
              context: str | None = None) -> dict[str, Any]:
    """A page of memories, newest first, optionally of one tag (prefix) or one context."""
    limit = validate_int(limit, "limit", default=20, minimum=1, maximum=100)
    offset = validate_int(offset, "offset", default=0, minimum=0, maximum=2**62)
    # state="all": every memory, each with its state, so a card can say "superseded"
    return store.list_memories(tags=[tag] if tag else None, context=context, limit=limit, offset=offset,
                               state="all")


def search(store: MemoryStore, params: dict[str, Any], memory_type: str | None = None) -> dict[str, Any]:
    """``store.recall(**params)``; with ``memory_type``, only results of that type are kept; in
    history mode each result's memory carries its ``state``."""
    if memory_type is not None and memory_type not in MEMORY_TYPES:
        raise ValidationError(f"'type' must be one of {', '.join(MEMORY_TYPES)}")
    if memory_type is None:
        answer = store.recall(**params)
    else:
        wanted = validate_int(params.get("limit"), "limit", default=10, minimum=1, maximum=RECALL_LIMIT)
        answer = store.recall(**{**params, "limit": store.config.max_limit})
        kept = [r for r in answer["results"] if r["memory"]["type"] == memory_type][:wanted]
        answer = {**answer, "results": kept, "count": len(kept), "type_filter": memory_type}
    if params.get("state_mode") == "history":  # the cards say which results are not current
        states = store.states([r["memory"] for r in answer["results"]])
        answer["results"] = [{**r, "memory": {**r["memory"], "state": states[r["id"]]}}
                             for r in answer["results"]]
    return answer


def _chain(store: MemoryStore, record: dict[str, Any]) -> list[dict[str, Any]]:
    """The supersession chain through ``record``: oldest first, each with its state."""
    def step(rec: dict[str, Any], direction: str) -> str | None:
        for edge in rec["edges"][direction]:
            if edge["type"] in SUPERSESSION_TYPES:
                return edge["memory_id"]
        return None

    def entry(rec: dict[str, Any]) -> dict[str, Any]:
        return {"id": rec["id"], "summary": rec.get("summary") or rec["content"][:120],
                "timestamp": rec["timestamp"], "status": rec["state"]["status"],
                "current": rec["state"]["current"]}

    seen = {record["id"]}
    older: list[dict[str, Any]] = []
    newer: list[dict[str, Any]] = []
    for direction, bucket in (("incoming", older), ("outgoing", newer)):
        rec = record
        while len(seen) < CHAIN_LIMIT:
            other = step(rec, direction)
            if other is None or other in seen:
                break
            seen.add(other)
            rec = store.get(other, with_edges=True)
            bucket.append(entry(rec))
    if not older and not newer:
        return []
    return [*reversed(older), {**entry(record), "this": True}, *newer]


def memory_page(store: MemoryStore, memory_id: str) -> dict[str, Any]:
    """A memory (full id or a unique prefix) with its state and edges, its supersession chain
    and its most similar memories."""
    record = store.get(store.resolve_id(memory_id), with_edges=True)
    similar = store.recall(record["content"][:2000], limit=SIMILAR_LIMIT + 1, state_mode="history")
    return {"status": "success", "memory": record, "chain": _chain(store, record),
            "similar": [{"id": r["id"], "summary": r["memory"].get("summary") or r["memory"]["content"][:120],
                         "type": r["memory"]["type"], "score": r["final_score"]}
                        for r in similar["results"] if r["id"] != record["id"]][:SIMILAR_LIMIT]}


def _node(record: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": record["id"], "summary": record.get("summary") or record["content"][:120],
            "type": record["type"], "importance": record["importance"], **extra}


def neighbourhood(store: MemoryStore, memory_id: str, depth: Any = 1) -> dict[str, Any]:
    """The memories within ``depth`` (1–3) hops over every relation type, and the edges among them."""
    depth = validate_int(depth, "depth", default=1, minimum=1, maximum=3)
    center = store.get(store.resolve_id(memory_id))
    around = store.related(center["id"], relationship_types=sorted(RELATION_TYPES),
                           max_depth=depth, limit=GRAPH_LIMIT)
    nodes = [_node(center, depth=0), *(_node(m, depth=m["depth"]) for m in around["related_memories"])]
    ids = [n["id"] for n in nodes]
    answer = {"status": "success", "center": center["id"], "depth": depth, "nodes": nodes,
              "edges": _read(store, lambda conn, sql: browse.edges_among(conn, sql, ids))}
    if around.get("truncated"):  # the walk hit its budget: the graph shows part of the neighbourhood
        answer.update(truncated=True, warnings=around["warnings"])
    return answer


def hubs(store: MemoryStore, limit: Any = 30) -> dict[str, Any]:
    """The most connected memories and the edges among them."""
    limit = validate_int(limit, "limit", default=30, minimum=1, maximum=GRAPH_LIMIT)

    def read(conn: Any, sql: Any) -> dict[str, Any]:
        top = browse.most_connected(conn, sql, limit)
        ids = [m["id"] for m in top]
        return {"nodes": [_node(m, degree=m["degree"]) for m in top],
                "edges": browse.edges_among(conn, sql, ids)}

    return {"status": "success", **_read(store, read)}


def health(store: MemoryStore) -> dict[str, Any]:
    """``localmem stats`` and ``localmem doctor`` in one answer."""
    from ..maintenance.stats import collect_stats
    from ..maintenance import doctor

    checks = doctor.check(store)
    return {"status": "success", "stats": collect_stats(store, 20),
            "checks": [c.as_dict() for c in checks], "problem_count": len(doctor.problems(checks))}
