"""Supersession: hide shadowed memories, fold older versions into their head.

A memory with an outgoing INVALIDATED_BY / EVOLVED_INTO edge is superseded.
Its *head* is the current end of its chain, as the AutoMem recall's state
filter finds it (``recall.state.active_replacements``: at most 5 hops, the
deepest node that is current).

- Default: a superseded memory that the search found is *folded* into its
  head: the head takes its place in the ranking (with the better of the two
  scores) and the old version is not returned. A superseded memory whose
  head is not current or not in scope is dropped.
- ``include_superseded``: the same ranking, and each folded older version
  is also returned as its own row right after its head (``folded: true``,
  ``superseded_by``, ``version``); a superseded memory without a head in
  scope is returned on its own, at its own rank.

``k`` counts heads and stand-alone rows; folded rows ride along with their
head. Memories that are expired or not yet valid (``t_invalid`` /
``t_valid``) without a supersession edge are never returned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..storage.records import rows_as_dicts
from ..recall.state import active_replacements, state_reason
from .scope import SearchScope
from .search import Candidate, rank

if TYPE_CHECKING:
    from ..storage.backend import Backend

MAX_VERSION_DEPTH = 50


@dataclass
class Entry:
    """One ranked result: a current memory (or a stand-alone superseded one) and
    the older versions folded into it."""

    head: Candidate
    score: float
    folded: list[Candidate] = field(default_factory=list)
    standalone_superseded: bool = False
    via: str | None = None  # the folded version whose match gave the head its score

    @property
    def memory(self) -> dict:
        return self.head.memory


@dataclass
class FoldOutcome:
    entries: list[Entry]
    successors: dict[str, tuple[str, str]]   # superseded id -> (direct successor id, its context)
    dropped: set[str]                        # candidates that are not returned in any form


def direct_successors(backend: "Backend", ids: list[str]) -> dict[str, tuple[str, str]]:
    if not ids:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for row in backend.conn.execute(backend.sql["kagura_successors"], {"ids": json.dumps(ids)}):
        source, successor, context, _ = row
        out.setdefault(source, (successor, context))
    return out


def versions(backend: "Backend", ids: list[str]) -> dict[str, int]:
    if not ids:
        return {}
    rows = backend.conn.execute(backend.sql["kagura_versions"], {
        "ids": json.dumps(ids), "max_depth": MAX_VERSION_DEPTH})
    return {memory_id: int(version) for memory_id, version in rows}


def _hydrate_pks(backend: "Backend", heads: list[Candidate]) -> None:
    """Integer keys of heads that came from the chain walk rather than the search."""
    if not heads:
        return
    rows = rows_as_dicts(backend.conn.execute(backend.sql["memories_by_ids"],
                                            {"ids": json.dumps([h.id for h in heads])}))
    pks = {row["id"]: row["pk"] for row in rows}
    for head in heads:
        head.pk = pks.get(head.id, -1)


def fold(backend: "Backend", candidates: list[Candidate], scope: SearchScope, now_iso: str,
         include_superseded: bool) -> FoldOutcome:
    """Group candidates (sorted best first) into ranked entries."""
    successors = direct_successors(backend, [c.id for c in candidates])
    heads = active_replacements(backend, list(successors), now_iso) if successors else {}
    by_id = {c.id: c for c in candidates}
    entries: dict[str, Entry] = {}
    dropped: set[str] = set()
    standalone: list[Entry] = []
    for candidate in candidates:
        if candidate.id not in successors:
            if state_reason(candidate.memory, now_iso) is not None:
                dropped.add(candidate.id)
            elif candidate.id not in entries:
                entries[candidate.id] = Entry(head=candidate, score=candidate.score)
            continue
        head = heads.get(candidate.id)
        head_memory = head["memory"] if head else None
        if head_memory is not None and scope.passes(head_memory):
            entry = entries.get(head_memory["id"])
            if entry is None:
                present = by_id.get(head_memory["id"])
                entry = Entry(head=present or Candidate(pk=-1, memory=head_memory, found=False),
                              score=present.score if present else candidate.score)
                entries[head_memory["id"]] = entry
            entry.folded.append(candidate)
        elif include_superseded:
            standalone.append(Entry(head=candidate, score=candidate.score, standalone_superseded=True))
        else:
            dropped.add(candidate.id)
    for entry in entries.values():
        if not entry.folded:
            continue
        best = max(entry.folded, key=lambda c: c.score)
        own = entry.head.score if entry.head.found else None
        entry.score = max(entry.score, best.score)
        if own is None or best.score > own:
            entry.via = best.id
    _hydrate_pks(backend, [e.head for e in entries.values() if e.head.pk < 0])
    ranked = list(entries.values()) + standalone
    rank(ranked, score=lambda e: e.score)
    return FoldOutcome(entries=ranked, successors=successors, dropped=dropped)
