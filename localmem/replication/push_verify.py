"""``localmem push --verify``: compare the local store with what the server holds.

Counts (local memories in scope, mapped, still pending, the server's own
count), then a random sample of mapped memories read back with
``GET /memory/{id}`` and compared field by field, their edges compared with
``GET /memories/{id}/related``, and a recall per sampled memory that must find
it: by its embedding when embeddings were sent (a miss there is listed apart,
``vector_not_found``, since AutoMem re-embeds a changed content with its own
provider), else, or then, by its content.
What the server adds by itself (AutoMem's entity tags and enrichment
metadata, the ``localmem_id`` marker) is not a difference.
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .push_wire import MARKER, SERVER_METADATA, SERVER_TAG_PREFIX, as_floats, referenced_ids, translate_ids

if TYPE_CHECKING:
    from .push import Pusher

DEFAULT_SAMPLE = 20
RECALL_LIMIT = 10


def _same_time(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        return datetime.fromisoformat(str(a).replace("Z", "+00:00")) == \
            datetime.fromisoformat(str(b).replace("Z", "+00:00"))
    except ValueError:
        return a == b


def _metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # the server's text, nested past any sane depth: no metadata
            return {}
    return value if isinstance(value, dict) else {}


def compare(row: dict[str, Any], remote: dict[str, Any], remote_ids: dict[str, str]) -> list[dict[str, Any]]:
    """The fields in which the server's memory differs from the local row."""
    differences = []

    def differ(name: str, local: Any, theirs: Any) -> None:
        differences.append({"id": row["id"], "field": name, "local": local, "remote": theirs})

    for name in ("content", "type"):
        if row[name] != remote.get(name):
            differ(name, row[name], remote.get(name))
    for name in ("importance", "confidence"):
        theirs = remote.get(name)
        if not isinstance(theirs, (int, float)) or not math.isclose(row[name], theirs, abs_tol=1e-9):
            differ(name, row[name], theirs)
    for name in ("timestamp", "t_valid", "t_invalid"):
        if not _same_time(row[name], remote.get(name)):
            differ(name, row[name], remote.get(name))
    local_tags = json.loads(row["tags"] or "[]")
    theirs = [t for t in remote.get("tags") or [] if isinstance(t, str)]
    extra = [t for t in theirs if t.lower() not in {x.lower() for x in local_tags}
             and not t.lower().startswith(SERVER_TAG_PREFIX)]
    if extra or {t.lower() for t in local_tags} - {t.lower() for t in theirs}:
        differ("tags", local_tags, theirs)
    local_meta, _ = translate_ids(json.loads(row["metadata"] or "{}"), remote_ids.get)
    remote_meta = {k: v for k, v in _metadata(remote.get("metadata")).items()
                   if k != MARKER and not (k in SERVER_METADATA and k not in local_meta)}
    if remote_meta != local_meta:
        differ("metadata", local_meta, remote_meta)
    return differences


def verify(pusher: Pusher, sample: int = DEFAULT_SAMPLE) -> dict[str, Any]:
    """Counts and a sampled comparison; ``ok`` is False when anything differs."""
    client, push_map = pusher.client, pusher.map
    counts = push_map.counts()
    health = client.get("/health")
    report: dict[str, Any] = {
        "local_memories": push_map.scoped_count(),
        "mapped": counts["mapped"], "not_pushed": counts["to_create"], "pending": counts["pending"],
        "changed_since_push": counts["to_update"], "deleted_not_propagated": counts["to_delete"],
        "server_memories": health.body.get("memory_count") if isinstance(health.body, dict) else None,
    }
    rows = push_map.sample(sample)
    remote_ids = push_map.remote_ids([r["id"] for r in rows] + [
        m for r in rows for m in referenced_ids(json.loads(r["metadata"] or "{}"))])
    differences: list[dict[str, Any]] = []
    missing: list[str] = []
    recall_missed: list[str] = []
    vector_differs: list[str] = []
    edge_missed: list[dict[str, Any]] = []
    for row in rows:
        response = client.get(f"/memory/{client.quoted(row['remote_id'])}")
        memory = response.body.get("memory") if response.ok and isinstance(response.body, dict) else None
        if not isinstance(memory, dict):
            missing.append(row["id"])
            continue
        differences += compare(row, memory, remote_ids)
        edge_missed += _check_edges(pusher, row)
        vector = as_floats(row.get("embedding")) if pusher.carry else None
        if vector is not None and not _recalled(pusher, row, embedding=",".join(repr(v) for v in vector)):
            # AutoMem re-embeds a changed content with its own provider: the vector differs,
            # the memory may still be found by its words.
            vector_differs.append(row["id"])
            vector = None
        if vector is None and not _recalled(pusher, row, query=row["content"][:500]):
            recall_missed.append(row["id"])
    report.update({
        "sampled": len(rows), "missing_on_server": missing, "differences": differences,
        "recall_checked": len(rows) - len(missing), "recall_missed": recall_missed,
        "vector_not_found": vector_differs,
        "edges_missing": edge_missed,
    })
    report["ok"] = not (missing or differences or recall_missed or edge_missed
                        or counts["to_create"] or counts["pending"] or counts["to_update"]
                        or counts["to_delete"])
    return report


def _check_edges(pusher: Pusher, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Each local edge of the memory whose other end the server has must show in its related list."""
    edges = pusher.map.memory_edges(row["id"])
    others = pusher.map.remote_ids([e["other_id"] for e in edges])
    wanted = {(e["type"], others[e["other_id"]]) for e in edges if e["other_id"] in others}
    if not wanted:
        return []
    types = sorted({t for t, _ in wanted})
    response = pusher.client.get(f"/memories/{pusher.client.quoted(row['remote_id'])}/related",
                                 relationship_types=",".join(types), limit=200, max_depth=1)
    related = response.body.get("related_memories") if isinstance(response.body, dict) else None
    seen = {m.get("id") for m in related or [] if isinstance(m, dict)}
    return [{"id": row["id"], "type": t, "other": other} for t, other in sorted(wanted) if other not in seen]


def _recalled(pusher: Pusher, row: dict[str, Any], **query: Any) -> bool:
    """Whether a recall on the server finds the memory: history mode (superseded memories
    too), within its own tags. A result with the same content counts, since both servers
    fold equal contents into one result."""
    tags = json.loads(row["tags"] or "[]")
    if tags:
        query.update({"tags": tags, "tag_mode": "all", "tag_match": "exact"})
    response = pusher.client.get("/recall", limit=RECALL_LIMIT, state_mode="history", **query)
    results = response.body.get("results") if isinstance(response.body, dict) else None
    for result in results or []:
        if not isinstance(result, dict):
            continue
        memory = result.get("memory") if isinstance(result.get("memory"), dict) else {}
        if row["remote_id"] in (result.get("id"), memory.get("id")) or memory.get("content") == row["content"]:
            return True
    return False
