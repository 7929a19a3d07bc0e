"""The edges of a pull: new and changed ones written with ``associate``, ones gone from the
server removed here.

Only edges between two memories the id map has are taken. Edges AutoMem's
enrichment makes itself (SIMILAR_TO, PRECEDED_BY, DISCOVERED) are counted and
skipped: the store's API takes no such edge, and taking them would bring back,
after a push, edges the local store never had. An edge is removed here when
the server no longer has it while it still has both its memories (a complete
listing only): AutoMem has no route that removes an edge, but its memories'
deletion or a graph rewrite can.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..relations import RELATION_TYPES
from ..errors import LocalMemError, NotFoundError, ValidationError
from ..storage.database import transaction
from .conflict_copy import link_to_superseding
from .pull_wire import BadRecord, authorable, read_edge

# The pull (``pull.Puller``) these run for; not imported, since pull imports this module.
Puller = Any


def _same(known: dict[str, Any], edge: Any) -> bool:
    """Whether the edge recorded as on both sides is the server's edge (the properties its
    relation type keeps, the strength)."""
    try:
        props = json.loads(known["properties"]) if known["properties"] else {}
    except ValueError:
        return False
    kept = RELATION_TYPES[edge.type].properties
    mine = {k: v for k, v in props.items() if k in kept} if isinstance(props, dict) else None
    return math.isclose(known["strength"], edge.strength, abs_tol=1e-6) and mine == edge.properties


def pull_edges(self: Puller) -> None:
    local = {rid: entry["local_id"] for rid, entry in self.map.items() if entry["present"]}
    known = self.state.known_edges()
    listed: set[tuple[str, str, str]] = set()
    server_made: dict[str, int] = {}
    unmapped = 0
    todo = []
    for index, item in enumerate(self.edges):
        try:
            edge = read_edge(item)
        except BadRecord as exc:
            self.summary.skip("edge", f"edges[{index}]", str(exc))
            continue
        listed.add((edge.src, edge.type, edge.dst))
        if not authorable(edge):
            server_made[edge.type] = server_made.get(edge.type, 0) + 1
            continue
        src, dst = local.get(edge.src), local.get(edge.dst)
        if src is None or dst is None:
            unmapped += 1
            continue
        key = (src, edge.type, dst)
        if key in known and _same(known[key], edge):
            self.summary.edges.unchanged += 1
            continue
        todo.append((key, edge, key in known))
    if server_made:
        self.summary.edges.skipped += sum(server_made.values())
        self.summary.warnings.append(
            "edges AutoMem's enrichment made itself are not copied (the store's API takes none): "
            + ", ".join(f"{name} ({count})" for name, count in sorted(server_made.items())))
    if unmapped:
        self.summary.edges.skipped += unmapped
        self.summary.warnings.append(f"{unmapped} edges name a memory not pulled (skipped, held back by "
                                     "--limit, or deleted here); taken by a later pull once both are here")
    self.phase("pulling edges", len(todo))
    done = []
    for key, edge, was_known in todo:
        src, kind, dst = key
        try:
            self.store.associate(src, dst, kind, edge.strength, **edge.properties)
        except (ValidationError, NotFoundError, LocalMemError) as exc:
            self.summary.fail("edge", f"{edge.src} -[{kind}]-> {edge.dst}", str(exc))
            continue
        row = self.state.local_edge(src, kind, dst)
        if row is not None:
            done.append(row)
        counter = "updated" if was_known else "created"
        setattr(self.summary.edges, counter, getattr(self.summary.edges, counter) + 1)
        self.advance()
        if len(done) >= self.batch_size:
            self.state.record_edges(done)
            done = []
    self.state.record_edges(done)
    if self.summary.complete:
        _remove_gone(self, known, listed)
    _link_conflict_copies(self)


def _link_conflict_copies(self: Puller) -> None:
    """Link each conflict copy held here to the memory its ``superseded_by`` names where the
    server gave no such link (``conflict_copy.link_to_superseding``); said in a warning."""
    with self.store.lock, transaction(self.store.conn):
        linked = link_to_superseding(self.store)
    if linked:
        self.summary.edges.created += linked
        self.summary.warnings.append(
            f"{linked} conflict copies linked here to the memory their metadata names (superseded_by): the "
            "server had no such link (it went with the winner, deleted there and created again); the next "
            "push sends it")


def _remove_gone(self: Puller, known: dict[tuple[str, str, str], Any],
                 listed: set[tuple[str, str, str]]) -> None:
    remote_of = {entry["local_id"]: rid for rid, entry in self.map.items()}
    gone = []
    for src, kind, dst in known:
        rsrc, rdst = remote_of.get(src), remote_of.get(dst)
        if rsrc is None or rdst is None or rsrc not in self.listing or rdst not in self.listing:
            continue  # a memory of it is not on both sides: the memory's own removal covers it
        if (rsrc, kind, rdst) in listed:
            continue
        try:
            self.store.dissociate(src, dst, kind)
            self.summary.edges.deleted += 1
        except NotFoundError:
            pass  # removed here too
        except (ValidationError, LocalMemError) as exc:
            self.summary.fail("edge", f"{src} -[{kind}]-> {dst}", str(exc))
            continue
        gone.append((src, kind, dst))
    self.state.forget_edges(gone)
