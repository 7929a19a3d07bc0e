"""``localmem sync PEER``: merge two stores in both directions (rules: ``sync_rules.py``).

Each side keeps, per peer, the change number up to which it has sent everything
(``sync_peers``); a sync reads each side's changes since then, page by page,
decides each memory against the other side's state (``sync_rules.decide``),
writes the outcome to both sides, and records the agreed versions (``sync_base``,
kept by the store that runs the sync). Only at the end do the sent marks move
on, so a sync stopped anywhere and run again redoes the rest; what was already
applied compares equal and is skipped. Memories go first (both directions),
then edges, which need their memories.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError
from .hlc import MAX_SKEW_MS
from .sync_rules import (
    ABSENT,
    EdgeState,
    MemoryState,
    decide,
    decide_edge,
)
from .conflict_copy import conflict_copy_record, conflict_link, is_conflict_copy
from .deletion_guard import check_deletions
from .seen import Seen, join
from .sync_side import CHANGED_MEANWHILE, MISSING_END, StoreSide, pages

if TYPE_CHECKING:
    from .sync_remote import RemoteSide

Progress = Callable[[str, int], None]
NO_STORE = "0" * 32  # a store identity no store draws (they are random): no echo is its
MERGE_ATTEMPTS = 3  # rounds a memory goes through the merge while writers keep changing it
Side = Any  # a StoreSide (a file), or a RemoteSide (a server): the same methods


@dataclass
class SyncSummary:
    """What a sync did (or, with ``dry_run``, would do)."""

    local: str
    peer: str
    dry_run: bool = False
    copied_to_peer: int = 0
    copied_to_local: int = 0
    deleted_on_peer: int = 0
    deleted_on_local: int = 0
    conflicts: list[dict[str, Any]] = field(default_factory=list)
    edits_kept_over_deletes: list[str] = field(default_factory=list)
    edges_to_peer: int = 0
    edges_to_local: int = 0
    refused: list[dict[str, str]] = field(default_factory=list)
    vectors: str = "embedded by each store with its own model"
    full_comparison: str | None = None  # why every change was compared, not only those since the last sync
    seen_window: str | None = None  # why a delete made during the sync's seen-join may count as seeing its merge

    def as_dict(self) -> dict[str, Any]:
        return {"status": "success", **asdict(self)}


class Sync:
    """One sync run between ``local`` and ``peer``."""

    def __init__(self, local: StoreSide, peer: StoreSide | RemoteSide, *, dry_run: bool = False,
                 progress: Progress | None = None, allow_deletes: int | None = None) -> None:
        if local.store_id == peer.store_id:
            raise LocalMemError(
                f"{peer.label} has the same store identity as {local.label}: it is a copy of the "
                "same file, not another store (sync merges two stores; copying a live file is how "
                "stores get corrupted)")
        self.local, self.peer = local, peer
        self.dry_run = dry_run
        self.allow_deletes = allow_deletes
        self.progress = progress or (lambda what, n: None)
        self.summary = SyncSummary(local.label, peer.label, dry_run=dry_run)
        # A file checks the version inside the join's transaction; a server says whether it can (sync_remote).
        self.summary.seen_window = None if isinstance(peer, StoreSide) else peer.seen_window()
        # Stamps more than the bounded skew ahead of the earlier of the two stores' clocks (a file
        # peer's or a server's, and this one's) order nothing: a store whose clock is broken
        # cannot vouch for it.
        clocks = [wall for wall in (local.wall_ms(), peer.wall_ms()) if wall is not None]
        self.horizon_ms = min(clocks) + MAX_SKEW_MS

    def run(self) -> SyncSummary:
        directions = ((self.local, self.peer), (self.peer, self.local))
        tokens = [side.pair_token(other.store_id) for side, other in directions]
        if tokens[0] != tokens[1]:  # not what the two drew at their last sync: trust no sent mark
            self.summary.full_comparison = (
                "the two stores do not hold the same token from their last sync (one was rolled back "
                "in place, or is a copy, or a sync between them was stopped at its very end): "
                "everything was compared")
        marks = {side.store_id: (0 if self.summary.full_comparison else side.sent_to(other.store_id), side.clock())
                 for side, other in directions}
        if not self.dry_run:
            for side in (self.local, self.peer):
                side.settle_pins()
            self.settle_owed_edges()
            self.refuse_mass_deletion(marks)
        for source, target in directions:
            since, until = marks[source.store_id]
            for page in (p for kind in ("memories", "deletions")
                         for p in pages(source, kind, since, until, self.echoes_of(target))):
                self.merge_memories(source, target, page)
                self.progress("memories", len(page))
        for source, target in directions:
            since, until = marks[source.store_id]
            for edges in pages(source, "edges", since, until, self.echoes_of(target)):
                self.merge_edges(source, target, edges)
                self.progress("edges", len(edges))
        if not self.dry_run:
            token = secrets.token_hex(16)
            for side, other in directions:
                side.record_sent(other.store_id, marks[side.store_id][1], token)
        return self.summary

    def echoes_of(self, target: Side) -> str:
        """Whose echoes a page leaves out (what a sync wrote from that store, which holds it): the
        target's; none in a full comparison, where the target may have lost what it had sent."""
        return NO_STORE if self.summary.full_comparison else target.store_id

    def refuse_mass_deletion(self, marks: dict[str, tuple[int, int]]) -> None:
        """Before anything is written: count the memories each store (a file; a server guards
        itself) would lose to the other's deletions, and stop when they are too many."""
        for source, target in ((self.local, self.peer), (self.peer, self.local)):
            if not isinstance(target, StoreSide):
                continue
            planned = 0
            since, until = marks[source.store_id]
            for page in pages(source, "deletions", since, until, self.echoes_of(target)):
                ids = [state.id for state in page]
                theirs, bases = target.memory_states(ids), self.bases(ids)
                for state in page:
                    other = theirs.get(state.id, MemoryState(state.id))
                    if other.exists and not other.problem:
                        decision = decide(state, other, bases.get(state.id), self.horizon_ms)
                        planned += decision.to_target is not None and decision.to_target.record is None
            check_deletions(planned, target.memory_count(), self.allow_deletes, target.label)

    # -- memories ----------------------------------------------------------------

    def merge_memories(self, source: Side, target: Side, page: list[MemoryState], attempt: int = 1) -> None:
        """Decide each memory of ``page`` (changed on ``source``) and write both sides. A write
        that finds its side changed since it was read (compare-and-set) writes nothing; that
        memory is read again and goes round the merge again (up to ``MERGE_ATTEMPTS`` times)."""
        ids = [state.id for state in page]
        theirs = target.memory_states(ids)
        bases = self.bases(ids)
        to_source: dict[str, MemoryState] = {}  # the state each memory must take there, by id
        to_target: dict[str, MemoryState] = {}
        copies: dict[str, MemoryState] = {}  # conflict copies to make (one per id: the same
        # conflict met twice in a page, or from a third store, makes the same copy)
        agreed: dict[str, str] = {}
        brought_back: dict[int, list[str]] = {id(source): [], id(target): []}  # ids kept over a delete, by keeper
        unmerged: set[str] = set()  # ids left as they were (damaged, or a write refused)
        for state in page:
            other = theirs.get(state.id, MemoryState(state.id))
            damaged = next((s for s in (state, other) if s.problem), None)
            if damaged is not None:
                side = source if damaged is state else target
                self.summary.refused.append({"id": state.id, "side": side.label, "reason": damaged.problem})
                unmerged.add(state.id)
                continue
            decision = decide(state, other, bases.get(state.id), self.horizon_ms)
            for states, chosen in ((to_source, decision.to_source), (to_target, decision.to_target)):
                if chosen is not None:
                    states[chosen.id] = chosen
            if decision.note == "conflict" and decision.conflict_loser is not None:
                assert decision.winner is not None
                loser = state if decision.conflict_loser is state.record else other
                copy = self.conflict_copy(state.id, loser, decision.winner.at.isoformat())
                copies.setdefault(copy.id, copy)
                self.summary.conflicts.append({"id": state.id, "kept_as": copy.id,
                                               "winner_updated_at": decision.winner.at.isoformat()
                                               if decision.winner else None})
            elif decision.note == "edit_kept":
                self.summary.edits_kept_over_deletes.append(state.id)
                brought_back[id(source if state.exists else target)].append(state.id)
            if decision.winner is not None:
                agreed[state.id] = decision.winner.text()
        read = {id(source): {s.id: _version_text(s) for s in page},
                id(target): {i: _version_text(theirs.get(i, MemoryState(i))) for i in ids}}
        held = self.place_conflict_copies(source, target, copies, (to_source, to_target), read)
        if self.dry_run:
            self.count(source, list(to_source.values()), list(to_target.values()))
            return
        for keeper in (source, target):  # before the memories go back: their edges are owed until written
            if brought_back[id(keeper)]:
                self.local.note_owed_edges(keeper.store_id, self.other(keeper).store_id, brought_back[id(keeper)])
        changed: set[str] = set()
        for side, states in ((source, list(to_source.values())), (target, list(to_target.values()))):
            refused = side.put_memories(states, self.other(side).store_id, read[id(side)])
            moved = {memory_id for memory_id, why in refused
                     if why == CHANGED_MEANWHILE and attempt < MERGE_ATTEMPTS}
            changed |= moved
            self.summary.refused += [{"id": memory_id, "side": side.label, "reason": why}
                                     for memory_id, why in refused if memory_id not in moved]
            failed = {memory_id for memory_id, _ in refused}
            unmerged |= failed
            agreed = {k: v for k, v in agreed.items() if k not in failed}
        self.join_seen(source, target, [s for s in page if s.id not in unmerged], theirs, (to_source, to_target),
                       read)
        self.count(source, [s for s in to_source.values() if s.id not in changed],
                   [s for s in to_target.values() if s.id not in changed])
        # The conflict copies this merge wrote, and those it met without writing (one a killed
        # sync wrote is met again: it was not noted as received), but those it must merge again.
        written = {s.id: s for s in (*to_source.values(), *to_target.values())
                   if is_conflict_copy(s) and s.id not in changed and s.id not in unmerged}
        met = [s for s in page if is_conflict_copy(s) and s.id not in written and s.id not in changed
               and s.id not in unmerged]
        self.link_conflict_copies(source, target, list(written.values()), met)
        for keeper in (source, target):
            kept = [i for i in brought_back[id(keeper)] if i not in changed]
            if kept:
                self.bring_edges_back(keeper, self.other(keeper), kept)
                self.local.clear_owed_edges(keeper.store_id, self.other(keeper).store_id, kept)
        # Both sides keep the versions they agreed on: the next sync may be run from either.
        self.local.record_bases(self.peer.store_id, agreed)
        self.peer.record_bases(self.local.store_id, agreed)
        if changed:
            again = sorted(changed)
            fresh = source.memory_states(again)
            self.merge_memories(source, target, [fresh.get(i, MemoryState(i)) for i in again], attempt + 1)
        for holder, state in held:
            self.merge_memories(holder, self.other(holder), [state], attempt)

    def join_seen(self, source: Side, target: Side, merged: list[MemoryState], theirs: dict[str, MemoryState],
                  writes: tuple[dict[str, MemoryState], dict[str, MemoryState]],
                  read: dict[int, dict[str, str]]) -> None:
        """Both sides of each merged memory have now seen what either had seen of it, and both
        versions (``seen.py``): a later deletion on either side then covers all of that. Written
        only where a side does not already know as much: its summary, its version now, and the
        record it held, which the triggers noted when the write replaced or deleted it (a plain
        copy, or an edit copied over the version it replaced, needs no row). And only where the
        side still holds the version this sync left there (the one it wrote, or the one it read):
        a memory another process changed meanwhile (a delete made before this side took the other
        version in) has not seen it; the next sync merges it again."""
        updates: dict[int, dict[str, Seen]] = {id(source): {}, id(target): {}}
        expected: dict[int, dict[str, str]] = {id(source): {}, id(target): {}}
        for state in merged:
            other = theirs.get(state.id, MemoryState(state.id))
            # A deletion's own stamp too: a store that took the delete in has seen it, so what it
            # writes after (an import of the version deleted) is new to that delete (sync_rules.py).
            both = join([state.seen, other.seen], [state.stamp, other.stamp, *_deletion_stamps(state, other)])
            for side, held, taken in ((source, state, writes[0]), (target, other, writes[1])):
                now = taken[state.id].stamp if state.id in taken else held.stamp
                if join([held.seen], [now, held.hlc if held.exists else None]) != both:
                    updates[id(side)][state.id] = both
                    expected[id(side)][state.id] = (_version_text(taken[state.id]) if state.id in taken
                                                    else read[id(side)][state.id])
        for side in (source, target):
            if updates[id(side)]:
                side.record_seen(updates[id(side)], expected[id(side)])

    def place_conflict_copies(self, source: Side, target: Side, copies: dict[str, MemoryState],
                              writes: tuple[dict[str, MemoryState], dict[str, MemoryState]],
                              read: dict[int, dict[str, str]]) -> list[tuple[Side, MemoryState]]:
        """Add each new conflict copy to both sides' writes, as a memory neither side holds (the
        write is a compare-and-set against that). A copy a side already holds (made by an earlier
        sync, perhaps edited or deleted since) is not made again: it is returned, with the side
        holding it, to be merged as the memory it is."""
        if not copies:
            return []
        fresh = [i for i in copies if i not in writes[0] and i not in writes[1]]
        on_source, on_target = source.memory_states(fresh), target.memory_states(fresh)
        held: list[tuple[Side, MemoryState]] = []
        for copy_id in fresh:
            if copy_id in on_source or copy_id in on_target:
                holder, state = (source, on_source[copy_id]) if copy_id in on_source else (target, on_target[copy_id])
                held.append((holder, state))
                continue
            for states in writes:
                states[copy_id] = copies[copy_id]
            read[id(source)][copy_id] = read[id(target)][copy_id] = ABSENT
        return held

    def bases(self, ids: list[str]) -> dict[str, str]:
        """The last version of each memory both stores agreed on. Both sides record it; a side
        that took a new identity (a backup copy, a restored store) still holds its own record,
        under the identity of the peer, which has none for the new one: read it there too."""
        bases = self.local.bases(self.peer.store_id, ids)
        missing = [i for i in ids if i not in bases]
        if missing and isinstance(self.peer, StoreSide):  # a server does not answer for its bases
            bases.update(self.peer.bases(self.local.store_id, missing))
        return bases

    def bring_edges_back(self, keeper: Side, other: Side, ids: list[str]) -> None:
        """A memory brought back where it was deleted lost its edges there with it: link again,
        stamped now, the conflict copies held there that name it (the delete removed their links;
        the keeper may not hold the copies yet, and their link's own stamp is older than the
        removal, which would win where the two meet: a file store only, see docs/sync.md), then
        copy the other edges from the side that kept it (those whose other end is there too)."""
        # The links first: the keeper's copy of such a link carries its old stamp, and a sync killed
        # before this leaves the removal free to travel first (settle_owed_edges brings them later).
        relinked = set(other.relink_conflict_copies(ids)) if isinstance(other, StoreSide) else set()
        edges = [edge for edge in keeper.memory_edges(ids) if edge.key not in relinked]
        # An edge not written joins a memory the other side does not hold: nothing to bring back.
        written = len(relinked) + (len(edges) - len(other.put_edges(edges, keeper.store_id)) if edges else 0)
        if other is self.peer:
            self.summary.edges_to_peer += written
        else:
            self.summary.edges_to_local += written

    def settle_owed_edges(self) -> None:
        """Bring back the edges a killed sync of these two stores owed memories it had brought
        back (noted in either store, when it is a file): those the keeper holds now, onto the
        memories the receiver holds now. A page of memories at a time; each is cleared, so this ends."""
        sides = {self.local.store_id: self.local, self.peer.store_id: self.peer}
        for holder in (side for side in sides.values() if isinstance(side, StoreSide)):
            while owed := holder.owed_edges(self.local.store_id, self.peer.store_id):
                for keeper, receiver, ids in owed:
                    self.bring_edges_back(sides[keeper], sides[receiver], ids)
                    holder.clear_owed_edges(keeper, receiver, ids)

    def conflict_copy(self, memory_id: str, loser: MemoryState, winner_at: str) -> MemoryState:
        """The losing version as a memory of its own, superseded by the winner (stamped as the
        losing change was, so every store holds and orders the copy alike)."""
        record = conflict_copy_record(memory_id, loser.record or {}, winner_at,
                                      "changed on both stores since they last synced; the later change won")
        return MemoryState(record["id"], record=record, hlc=loser.hlc)

    def link_conflict_copies(self, source: Side, target: Side, written: list[MemoryState],
                             met: list[MemoryState]) -> None:
        """Link each conflict copy to the memory that won: those just ``written``, on both sides
        (a link a delete of the winner removed comes back with the copy); those only ``met``, on
        each side that never held the link (no edge, no removal logged). A sync killed between
        writing a copy and linking it, or between the two links, leaves the conflict settled and
        the link owed: the next sync meets the copy and makes it. A link removed since a copy was
        made travels as the removal it is."""
        links = {link.key: (link, True) for link in map(conflict_link, written)}
        links.update({link.key: (link, False) for link in map(conflict_link, met) if link.key not in links})
        if not links:
            return
        for side in (source, target):
            asked = [key for key, (_, always) in links.items() if not always]
            held = side.edge_states(asked) if asked else {}
            owed = [link for key, (link, always) in links.items()
                    if always or held.get(key, EdgeState(key)).version is None]
            # Refused only when the copy or the memory it links to is not there: its write was
            # refused (already listed) or a writer deleted it meanwhile, a deletion the next sync
            # carries; there is then nothing to link.
            if owed:
                side.put_edges(owed, self.other(side).store_id)

    def count(self, source: Side, to_source: list[MemoryState], to_target: list[MemoryState]) -> None:
        for side, states in ((source, to_source), (self.other(source), to_target)):
            copied = sum(1 for s in states if s.record is not None)
            deleted = len(states) - copied
            if side is self.peer:
                self.summary.copied_to_peer += copied
                self.summary.deleted_on_peer += deleted
            else:
                self.summary.copied_to_local += copied
                self.summary.deleted_on_local += deleted

    def other(self, side: Side) -> Side:
        return self.peer if side is self.local else self.local

    # -- edges -------------------------------------------------------------------

    def merge_edges(self, source: Side, target: Side, page: list[EdgeState]) -> None:
        theirs = target.edge_states([edge.key for edge in page])
        writes: dict[int, list[EdgeState]] = {id(source): [], id(target): []}
        for edge in page:
            to_source, to_target = decide_edge(edge, theirs.get(edge.key, EdgeState(edge.key)), self.horizon_ms)
            for side, state in ((source, to_source), (target, to_target)):
                if state is not None:
                    writes[id(side)].append(state)
        for side in (source, target):
            states = writes[id(side)]
            if side is self.peer:
                self.summary.edges_to_peer += len(states)
            else:
                self.summary.edges_to_local += len(states)
            if self.dry_run or not states:
                continue
            wanted = {state.key: state for state in states}
            waiting: list[tuple[str, str, str]] = []
            for key, why in side.put_edges(states, self.other(side).store_id):
                if not wanted[key].exists:  # a removal whose memory is gone here needs nothing
                    continue
                if why.startswith(MISSING_END) and isinstance(self.other(side), StoreSide):
                    # Its memory has not come here yet (a writer changed it during this sync, so
                    # it goes with the next one) or goes (deleted here): send the edge again then.
                    waiting.append(key)
                else:
                    self.summary.refused.append({"id": " ".join(key), "side": side.label, "reason": why})
            if waiting:
                self.other(side).requeue_edges(waiting)


def _deletion_stamps(*states: MemoryState) -> list[str]:
    """The stamps of those ``states`` that are deletions (the deletes themselves, not what they deleted)."""
    return [s.hlc for s in states if s.record is None and s.hlc]


def _version_text(state: MemoryState) -> str:
    version = state.version
    return version.text() if version is not None else ABSENT


def sync_stores(local: StoreSide, peer: StoreSide | RemoteSide, *, dry_run: bool = False,
                progress: Progress | None = None, allow_deletes: int | None = None) -> SyncSummary:
    """Merge ``peer`` and ``local`` both ways; see the module docstring. A run that would delete
    more than a small share of a store's memories stops first unless ``allow_deletes`` covers it."""
    return Sync(local, peer, dry_run=dry_run, progress=progress, allow_deletes=allow_deletes).run()
