"""The store's statistics: its health report plus counts by type, context, edge type
and tag, the time span, and what recall's current-state filter keeps and hides
(``localmem stats``, the browser's overview)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..store import MemoryStore


def collect_stats(store: MemoryStore, top: int) -> dict[str, Any]:
    """``store.health()`` plus type, context, edge-type and tag counts and the time span."""
    def pairs(name: str, **bindings: Any) -> list[tuple[str, int]]:
        with store.lock:
            return [(row[0], row[1]) for row in store.conn.execute(store.sql[name], bindings)]

    health = store.health()
    with store.lock:
        overview = store.conn.execute(store.sql["stats_overview"]).fetchone()
    return {
        "status": "success",
        **health,
        "types": dict(pairs("stats_types")),
        "contexts": dict(pairs("stats_contexts")),
        "edge_types": dict(pairs("stats_edge_types")),
        "top_tags": [{"tag": tag, "count": count} for tag, count in pairs("stats_top_tags", limit=max(0, top))],
        "oldest": overview[0],
        "newest": overview[1],
        "archived_count": overview[2] or 0,
        "invalidated_count": overview[3] or 0,  # t_invalid set (past or future)
        # What recall's current-state filter keeps and hides, by its own rules.
        "state_counts": store.state_counts(),
    }
