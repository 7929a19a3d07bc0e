"""Bounded walks over edges: breadth first, each memory expanded once, within a budget.

A recursive CTE that carries a path string (UNION ALL, "never revisit a node
on this path") enumerates every path, and a layered or densely linked graph
has exponentially many: 20 layers of 3 memories give 3^20 paths from the
first layer. Here a walk keeps one visited set for the whole walk and reads
the edges of a whole frontier with one statement per depth (an index seek
per frontier memory), so its work is the edges it reads, at most
``edge_budget``, and it checks a deadline between depths. A walk stopped by
either limit says so in ``truncated``; the callers put that in their answer.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Iterable

import apsw

from .statements import Statements

# Edges one walk may read; far above any real neighbourhood or supersession chain.
WALK_EDGE_BUDGET = 20_000
# Seconds one walk may take before it stops with what it found.
WALK_SECONDS = 2.0
DIRECTIONS = {"out": "walk_edges_out", "in": "walk_edges_in"}


@dataclass
class Walk:
    """What a walk reached: each memory's hops from the start (starts: 0) and the memory it was
    first reached from; ``truncated`` says why the walk stopped early (None: it did not)."""

    depth: dict[int, int]
    parent: dict[int, int] = field(default_factory=dict)
    edges_read: int = 0
    truncated: str | None = None

    def path_to(self, node: int) -> list[int]:
        """The start-to-``node`` path of integer keys (``node`` must have been reached)."""
        path = [node]
        while path[-1] in self.parent:
            path.append(self.parent[path[-1]])
        return path[::-1]


def walk(conn: apsw.Connection, sql: Statements, starts: Iterable[int], types: Iterable[str], *,
         directions: tuple[str, ...] = ("out",), max_depth: int | None = None, stop_at: int | None = None,
         edge_budget: int | None = None, seconds: float | None = None) -> Walk:
    """Breadth-first from ``starts`` along edges of ``types`` (``directions``: "out" follows
    src -> dst, "in" dst -> src), at most ``max_depth`` hops (None: no limit but the budget);
    stops as soon as ``stop_at`` is reached. The budget and deadline default to
    ``WALK_EDGE_BUDGET`` and ``WALK_SECONDS``."""
    edge_budget = WALK_EDGE_BUDGET if edge_budget is None else edge_budget
    seconds = WALK_SECONDS if seconds is None else seconds
    found = Walk(depth={pk: 0 for pk in starts})
    types_json = json.dumps(sorted(set(types)))
    deadline = time.monotonic() + seconds
    frontier = list(found.depth)
    level = 0
    while frontier and (max_depth is None or level < max_depth) and stop_at not in found.depth:
        if time.monotonic() > deadline:
            found.truncated = f"the walk stopped at its {seconds:g} s deadline after {level} hops"
            break
        nodes = json.dumps(frontier)
        reached: list[int] = []
        for direction in directions:
            left = edge_budget - found.edges_read
            rows = conn.execute(sql[DIRECTIONS[direction]],
                                {"nodes": nodes, "types": types_json, "limit": left + 1}).fetchall()
            if len(rows) > left:
                rows = rows[:left]
                found.truncated = (f"the walk stopped after reading {edge_budget:,} edges "
                                   f"({len(found.depth):,} memories reached, {level + 1} hops deep)")
            found.edges_read += len(rows)
            for here, there in rows:
                if there not in found.depth:
                    found.depth[there] = level + 1
                    found.parent[there] = here
                    reached.append(there)
            if found.truncated:
                return found
        frontier = reached
        level += 1
    return found
