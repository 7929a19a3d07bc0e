"""Three replicas, random edits, deletes, edges, writers and kills during syncs (issue 42, item 8).

A Hypothesis state machine drives three stores with random stores, edits, deletes (some made
while another replica edits the same memory unseen), edges,
supersessions, clock skews of hours (each replica's clock, which its hybrid logical clock
reads, is shifted and can jump), random sync pairs and directions, a writer that edits a
replica between a sync's read and its write, and syncs killed part-way (after a page, or
right before any one of their commits). After a final round of
syncs every replica must hold the same memories (every synced field) and the same edges, and:

* **no write lost** unless causally overwritten or deleted: every text ever written is still
  held as a memory or a conflict copy (not only in a trash) unless a replica that had seen it
  (through syncs) edited that memory again or deleted it: an edit made concurrently with a
  delete survives it, whatever the clocks read;
* **no delete undone** unless causally re-edited: a memory deleted on a replica is back only
  if some replica edited it without having seen that delete.

Between syncs the replicas also run what users run (docs/sync.md, "Forget, the trash, imports
and the same note twice"): ``store_many`` (with and without dedup), the same note stored with
dedup on two replicas before they sync, and again on one that holds it, tag / importance /
metadata updates, removing a link, ``forget`` (of a memory held, or only in the trash, perhaps
right after an export), ``trash restore`` (of a memory a sync deleted), and ``import`` of an
export taken earlier (``skip_existing`` or ``update``; a refused line removed and the import
run again, as its message says), also as the story an export's sync stamps are for: an import,
then an edit and a delete of an imported memory there, before any sync (a version written with
its file's stamp counts as seen by that delete; one written as the importer's own, by the
``updated_at`` rule only); and as the story of a first sync after an import: an export, an import
elsewhere, an edit on the exporting replica, then the importing replica meets it (from that replica or
through the third). Checked besides:

* **no conflict copy nobody made**: in that story, the sync that brings the edit to a replica still
  holding the exported version makes no conflict copy of it (the exporter had seen it);
* **a forgotten memory never comes back**, on any replica, through a sync or an import, from
  the step a replica knew it purged (at every step), and nowhere after the final syncs (nor in a trash);
* **a restore reaches every replica**, unless a replica that had seen it deleted the memory again;
* **the same note stored on two replicas stays two memories** (sync folds nothing by dedup key),
  neither lost without a delete; a store with dedup returns a memory the replica holds;
* **a removed link stays removed** while both ends are held, when the replica that removed it
  had seen every write of it (and every import, restore, edit kept over a delete or killed sync,
  which may write links too) and none came after.

Memory ids come from a counter and store identities from the example, so an example replays the
same states (rules pick memories in id order, preconditions read the stores, stamps tie-break by store).

What a replica "has seen" is tracked through syncs, as a most and a least (a killed sync may
have carried anything, a write racing a sync may wait for the next one), each check using the
bound that cannot make it fail wrongly. Bounded here: 45 derandomized examples
(the same ones every run, a few seconds). ``python benchmarks/replication/sync_stateful.py
--examples 500`` runs fresh random ones (``LOCALMEM_STATEFUL_EXAMPLES``, ``_STEPS``, ``_SEED``).
Shrinking is off (it took over five minutes per failure here).
"""

from __future__ import annotations

import json
import tempfile
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import seed as seed_test
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from localmem import MemoryStore
from localmem.maintenance.forget import forget
from localmem.replication.sync import SyncSummary, sync_stores
from localmem.replication.sync_rules import digest
from localmem.replication.sync_side import StoreSide
from localmem.trash import restore
from stateful_budget import ConvergesAtTeardown, stateful_settings
from sync_model_imports import REPLICAS, ImportRules
SKEWS = st.sampled_from([timedelta(0), timedelta(hours=3), -timedelta(hours=2), timedelta(minutes=1),
                         timedelta(hours=7)])


def folded(text: str) -> str:
    """A text as dedup compares it (docs/dedup.md), for the texts this model writes."""
    return " ".join(text.casefold().rstrip(".!…").split())


class Killed(Exception):
    """Raised from a sync's progress callback: the sync stops there, as a killed process would."""


class RacingSide(StoreSide):
    """A store with another writer: right before the sync's first write here, ``race`` runs."""

    def __init__(self, store: MemoryStore, label: str, race) -> None:
        super().__init__(store, label)
        self.race = race

    def put_memories(self, states, peer, expect=None):
        if self.race is not None:
            race, self.race = self.race, None
            race([s.id for s in states])
        return super().put_memories(states, peer, expect)


class Replicas(ImportRules, RuleBasedStateMachine):
    @initialize(skews=st.lists(SKEWS, min_size=REPLICAS, max_size=REPLICAS),
                order=st.permutations(range(REPLICAS)))
    def open_stores(self, skews, order):
        self.folder = tempfile.TemporaryDirectory(prefix="localmem-stateful-")
        self.offsets = list(skews)
        self.ticks = [0]
        self.stores = [MemoryStore(Path(self.folder.name) / f"r{n}.db", embedder="hash",
                                   clock=self._clock(n)) for n in range(REPLICAS)]
        for n, store in enumerate(self.stores):  # identities from the example: replays order stamps alike
            store.conn.execute("UPDATE meta SET value = ? WHERE key = 'store_id'", (f"{order[n] + 1:032x}",))
        self.written: set[str] = set()  # every id ever stored
        self.deleted: set[str] = set()  # ids some replica deleted at some point
        self.texts: dict[str, str] = {}  # every text written -> the id it was written to
        self.changes: dict[str, str] = {}  # every change (a text, or a supersession) -> the id it changed
        # The changes each replica has seen, at most (a killed sync may have carried everything) and
        # at least (only what a finished sync surely carried): what excuses an overwrite or a
        # delete uses the first, what makes a return legitimate the second, so neither check
        # fails for want of knowing what a killed or raced sync carried.
        self.seen: list[set[str]] = [set() for _ in range(REPLICAS)]
        self.seen_surely: list[set[str]] = [set() for _ in range(REPLICAS)]
        self.excused: set[str] = set()  # texts causally overwritten or deleted
        self.deletes: list[tuple[str, frozenset[str], frozenset[str]]] = []  # (id, what the deleter had
        # seen surely, at most)
        self.serial = 0
        self.forgotten: set[str] = set()  # ids `forget` purged on some replica
        self.forgot_texts: set[str] = set()  # what they held (or their trash entries did) anywhere, when forgotten
        self.purges_known: list[set[str]] = [set() for _ in range(REPLICAS)]  # ids each replica knew purged
        self.exports: list[list[str]] = []  # export files taken (the last few), for a later import
        self.export_seen: list[tuple[frozenset[str], frozenset[str]]] = []  # what each one's replica had seen
        self.restores: list[tuple[str, str]] = []  # (id, the change a restore made)
        self.deleted_versions: list[tuple[str, str, str]] = []  # (id, the updated_at deleted, the delete's token)
        self.restores_undone: set[str] = set()  # restores an import wrote a deleted version over (below)
        self.restored_at: dict[str, str] = {}  # a restore's change -> the updated_at of the version it wrote
        self.same_notes: list[tuple[str, str]] = []  # one note stored on two replicas: the two ids
        self.imported_as: dict[str, set[str]] = {}  # a text an import wrote -> the updated_at it wrote it with
        # Links (RELATES_TO, by ids): when each was made and removed, in the order the steps ran, and
        # what may have written edges besides (imports, restores, edits kept over deletes, killed syncs).
        self.tick = 0
        self.links: dict[tuple[str, str], list[tuple[int, str]]] = {}  # (src, dst) -> [(tick, change)]
        self.rewrites: list[tuple[int, str]] = []  # (tick, change)
        self.unlinks: list[tuple[tuple[str, str], int, frozenset[str]]] = []  # (src, dst), tick, seen surely

    def _clock(self, n: int):
        def now() -> datetime:
            self.ticks[0] += 1  # strictly increasing, a millisecond a step, shifted by the skew
            return datetime(2026, 1, 1, tzinfo=timezone.utc) + self.offsets[n] + timedelta(milliseconds=self.ticks[0])
        return now

    def teardown(self):
        for store in getattr(self, "stores", []):
            store.close()
        if hasattr(self, "folder"):
            self.folder.cleanup()

    def ids(self, n: int) -> list[str]:
        return sorted(row[0] for row in self.stores[n].conn.execute("SELECT id FROM memories"))

    def new_id(self) -> str:
        """A new memory id, the same in every run of an example (the rules pick memories in id
        order, and Hypothesis replays an example expecting the same states)."""
        self.serial += 1
        return str(uuid.UUID(int=self.serial << 64 | self.serial, version=4))

    def text(self, n: int, memory_id: str, words: str, exact: str | None = None) -> str:
        """Write a new, unique text to ``memory_id`` on replica ``n`` (new or edited): ``exact``, or of ``words``."""
        self.serial += 1
        text = exact or f"t{self.serial} {words}".strip()  # as the store keeps it
        self.texts[text] = self.changes[text] = memory_id
        held = {row[0] for row in self.stores[n].conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,))}
        # Overwritten having been seen: each text of this memory, or the one it holds (a conflict copy's).
        self.excused |= {t for t in self.seen[n] if self.texts.get(t) == memory_id or t in held}
        self.seen[n].add(text)
        self.seen_surely[n].add(text)
        return text

    @rule(n=st.integers(0, REPLICAS - 1), words=st.text("abcdefgh ", min_size=1, max_size=12))
    def store(self, n, words):
        memory_id = self.new_id()
        self.stores[n].store(self.text(n, memory_id, words), id=memory_id)
        self.written.add(memory_id)

    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6), words=st.text("xyz", min_size=1, max_size=6))
    def edit(self, n, pick, words):
        ids = self.ids(n)
        if ids:
            memory_id = ids[pick % len(ids)]
            self.stores[n].update(memory_id, content=self.text(n, memory_id, words))

    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6))
    def delete(self, n, pick):
        ids = self.ids(n)
        if ids:
            memory_id = ids[pick % len(ids)]
            record = self.stores[n].get(memory_id)
            content = record["content"]
            self.stores[n].delete(memory_id)
            self.deleted.add(memory_id)
            # Deleted having seen these: each text of this memory (or held by it, a conflict copy).
            self.excused |= {t for t in self.seen[n] if self.texts.get(t) == memory_id or t == content}
            # A text seen only through an import (no stamps: another store's version, to the sync) is
            # covered only by a delete of that very version (its updated_at, docs/sync.md; seed 1147).
            surely = {t for t in self.seen_surely[n] if self.texts.get(t) != memory_id
                      or record["updated_at"] in self.imported_as.get(t, {record["updated_at"]})}
            self.deletes.append((memory_id, frozenset(surely), frozenset(self.seen[n])))
            token = f"d{len(self.deleted_versions)}"  # the delete, seen (not in changes: "came back" reads those)
            self.seen[n].add(token)
            self.seen_surely[n].add(token)
            self.deleted_versions.append((memory_id, record["updated_at"], token))

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6),
          words=st.text("xyz", min_size=1, max_size=6))
    def edit_while_another_deletes(self, a, b, pick, words):
        """Replica ``b`` edits a memory both hold; then ``a``, not having seen that edit, edits
        it too and deletes it (so the version deleted is stamped after ``b``'s edit)."""
        shared = sorted(set(self.ids(a)) & set(self.ids(b)))
        if a != b and shared:
            memory_id = shared[pick % len(shared)]
            self.stores[b].update(memory_id, content=self.text(b, memory_id, words))
            self.stores[a].update(memory_id, content=self.text(a, memory_id, words))
            self.delete(a, self.ids(a).index(memory_id))

    @rule(n=st.integers(0, REPLICAS - 1), a=st.integers(0, 10 ** 6), b=st.integers(0, 10 ** 6))
    def link(self, n, a, b):
        ids = self.ids(n)
        if len(ids) >= 2 and ids[a % len(ids)] != ids[b % len(ids)]:
            self.stores[n].associate(ids[a % len(ids)], ids[b % len(ids)], "RELATES_TO", 0.5)
            self.links.setdefault((ids[a % len(ids)], ids[b % len(ids)]), []).append(self.edge_change(n))

    def edge_change(self, *replicas: int) -> tuple[int, str]:
        """A write of links on ``replicas`` (seen there): when, and its name."""
        self.tick += 1
        for n in replicas:
            self.seen[n].add(f"e{self.tick}")
            self.seen_surely[n].add(f"e{self.tick}")
        return self.tick, f"e{self.tick}"

    @rule(n=st.integers(0, REPLICAS - 1), a=st.integers(0, 10 ** 6), b=st.integers(0, 10 ** 6))
    def supersede(self, n, a, b):
        ids = self.ids(n)
        if len(ids) >= 2 and ids[a % len(ids)] != ids[b % len(ids)]:
            self.stores[n].supersede(ids[a % len(ids)], ids[b % len(ids)])
            for memory_id in (ids[a % len(ids)], ids[b % len(ids)]):  # a change to both memories' fields
                self.serial += 1
                self.changes[f"s{self.serial}"] = memory_id
                self.seen[n].add(f"s{self.serial}")
                self.seen_surely[n].add(f"s{self.serial}")

    def change(self, n: int, memory_id: str, kind: str) -> str:
        """Note a change to ``memory_id`` on replica ``n`` other than a new text (seen there)."""
        self.serial += 1
        token = f"{kind}{self.serial}"
        self.changes[token] = memory_id
        self.seen[n].add(token)
        self.seen_surely[n].add(token)
        return token

    def stored(self, n: int, text: str, memory_id: str, got: str) -> None:
        """``text`` was stored on replica ``n`` as ``memory_id``, with dedup: ``got`` is the id returned."""
        if got == memory_id:
            self.written.add(memory_id)
            return
        assert got in self.ids(n), f"{text!r} deduped to {got}, which replica {n} does not hold"
        held = self.stores[n].get(got)["content"]
        assert folded(held) == folded(text), f"{text!r} deduped to {got}, which holds {held!r}"
        del self.texts[text], self.changes[text]  # nothing was written: the memory there is unchanged
        self.seen[n].discard(text)
        self.seen_surely[n].discard(text)

    @rule(n=st.integers(0, REPLICAS - 1), words=st.text("abcdefgh ", min_size=1, max_size=12),
          count=st.integers(1, 3), dedup=st.booleans())
    def store_many(self, n, words, count, dedup):
        ids = [self.new_id() for _ in range(count)]
        texts = [self.text(n, memory_id, words) for memory_id in ids]
        got = self.stores[n].store_many([{"content": t, "id": i} for t, i in zip(texts, ids)], dedup=dedup)
        for text, memory_id, given in zip(texts, ids, got):
            self.stored(n, text, memory_id, given)

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), words=st.text("abcdefgh ", min_size=1,
                                                                                         max_size=12))
    def same_note_on_two(self, a, b, words):
        """The same note stored (with dedup) on two replicas before they sync: by its dedup key (once
        in capitals, with a full stop), so the model still tells the two texts apart."""
        if a != b:
            first, second = self.new_id(), self.new_id()
            text = self.text(a, first, words)
            self.stored(a, text, first, self.stores[a].store(text, id=first, dedup=True))
            variant = self.text(b, second, "", exact=text.upper() + ".")
            self.stored(b, variant, second, self.stores[b].store(variant, id=second, dedup=True))
            self.same_notes.append((first, second))

    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6), mask=st.integers(0, 2 ** 16))
    def store_again(self, n, pick, mask):
        """Store (with dedup) a note replica ``n`` holds again, in other cases: one memory if that one is current."""
        held = sorted(row[0] for row in self.stores[n].conn.execute("SELECT content FROM memories"))
        if held:
            chosen = held[pick % len(held)]
            variant = "".join(c.upper() if mask >> (i % 16) & 1 else c.lower() for i, c in enumerate(chosen))
            if variant not in self.texts:
                memory_id = self.new_id()
                self.text(n, memory_id, "", exact=variant)
                self.stored(n, variant, memory_id, self.stores[n].store(variant, id=memory_id, dedup=True))

    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6),
          field=st.sampled_from(["tags", "importance", "metadata"]), value=st.integers(0, 3))
    def update_fields(self, n, pick, field, value):
        ids = self.ids(n)
        if ids:
            memory_id = ids[pick % len(ids)]
            given = {"tags": [f"tag{value}"], "importance": 0.1 + value / 4, "metadata": {"k": value}}[field]
            before = digest(self.stores[n].get(memory_id))
            self.stores[n].update(memory_id, **{field: given})
            if digest(self.stores[n].get(memory_id)) != before:
                self.change(n, memory_id, "u")

    def held_links(self, n: int) -> list[tuple[str, str]]:
        return sorted(self.stores[n].conn.execute(
            "SELECT a.id, b.id FROM edges e JOIN memories a ON a.pk = e.src JOIN memories b ON b.pk = e.dst "
            "WHERE e.type = 'RELATES_TO'"))

    @precondition(lambda self: any(self.held_links(n) for n in range(REPLICAS)))
    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6))
    def unlink(self, n, pick):
        holding = [r for r in range(REPLICAS) if self.held_links(r)]
        n = holding[n % len(holding)]
        links = self.held_links(n)
        if links:
            first, second = links[pick % len(links)]
            assert self.stores[n].dissociate(first, second, "RELATES_TO")["removed"] == 1
            self.tick += 1
            self.unlinks.append(((first, second), self.tick, frozenset(self.seen_surely[n])))

    def trashed_ids(self, n: int) -> list[str]:
        return sorted(row[0] for row in self.stores[n].conn.execute("SELECT id FROM trash"))

    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6), in_trash=st.booleans(),
          exported=st.booleans())
    def forget_one(self, n, pick, in_trash, exported):
        """`localmem forget` of a memory replica ``n`` holds, or of one only in its trash; perhaps
        right after an export there (an older export, for a later import, holding the memory)."""
        ids = self.trashed_ids(n) if in_trash else self.ids(n)
        if ids:
            memory_id = ids[pick % len(ids)]
            if exported:
                self.export(n)
            for store in self.stores:  # whatever the replicas hold of it now goes, on each, with the purge
                self.forgot_texts |= {row[0] for row in store.conn.execute(
                    "SELECT content FROM memories WHERE id = ?", (memory_id,))}
                self.forgot_texts |= {json.loads(row[0]).get("content") for row in store.conn.execute(
                    "SELECT record FROM trash WHERE id = ?", (memory_id,))}
            assert forget(self.stores[n], [memory_id])["forgotten"] == 1
            self.forgotten.add(memory_id)
            self.deleted.add(memory_id)

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6),
          then_restore=st.booleans())
    def delete_and_sync(self, a, b, pick, then_restore):
        """``a`` deletes a memory both hold and syncs with ``b`` (into ``b``'s trash); perhaps ``b`` restores it."""
        shared = sorted(set(self.ids(a)) & set(self.ids(b)))
        if a != b and shared:
            memory_id = shared[pick % len(shared)]
            self.delete(a, self.ids(a).index(memory_id))
            self.sync(a, b)
            # Not held there (a trash entry outlives a memory that came back since: an edit b holds
            # that a had not seen is kept over its delete; seed 1403725530)
            if then_restore and memory_id in self.trashed_ids(b) and memory_id not in self.ids(b):
                self.restore_one(b, memory_id)

    @precondition(lambda self: any(set(self.trashed_ids(n)) - set(self.ids(n)) for n in range(REPLICAS)))
    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6))
    def restore_from_trash(self, n, pick):
        """`localmem trash restore` of a memory a sync deleted (an edit made now)."""
        holding = [r for r in range(REPLICAS) if set(self.trashed_ids(r)) - set(self.ids(r))]
        n = holding[n % len(holding)]
        ids = sorted(set(self.trashed_ids(n)) - set(self.ids(n)))  # not stored again meanwhile (an import)
        if ids:
            self.restore_one(n, ids[pick % len(ids)])

    def restore_one(self, n: int, memory_id: str) -> None:
        content = restore(self.stores[n], memory_id)["content"]
        self.rewrites.append(self.edge_change(n))  # with its edges
        if content in self.texts:  # held here now: seen
            self.seen[n] |= {content}
            self.seen_surely[n] |= {content}
        token = self.change(n, memory_id, "r")
        self.restores.append((memory_id, token))
        self.restored_at[token] = self.stores[n].get(memory_id)["updated_at"]

    @rule(n=st.integers(0, REPLICAS - 1), skew=SKEWS)
    def clock_jumps(self, n, skew):
        self.offsets[n] = skew  # a clock set right, or wrong, between two changes

    def _sync(self, a: int, b: int, local: StoreSide, peer: StoreSide, progress=None) -> SyncSummary | None:
        """Sync replicas ``a`` and ``b``; the summary (None: the sync was killed)."""
        surely = self.seen_surely[a] | self.seen_surely[b]  # what a finished sync carries both ways
        summary = None
        try:
            summary = sync_stores(local, peer, allow_deletes=10 ** 6, progress=progress)
        except Killed:
            self.rewrites.append(self.edge_change(a, b))  # it may have brought a memory back, with its edges
        else:
            assert summary.refused == [], summary.refused
            if summary.edits_kept_over_deletes:
                self.rewrites.append(self.edge_change(a, b))
            self.seen_surely[a] |= surely  # not a raced write: made after the sync's read, it may wait
            self.seen_surely[b] |= surely
        union = self.seen[a] | self.seen[b]
        self.seen[a], self.seen[b] = set(union), set(union)
        return summary

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1))
    def sync(self, a, b):
        if a != b:
            self._sync(a, b, StoreSide(self.stores[a], f"r{a}"), StoreSide(self.stores[b], f"r{b}"))

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), on_peer=st.booleans(),
          pick=st.integers(0, 10 ** 6), delete=st.booleans())
    def sync_with_a_writer(self, a, b, on_peer, pick, delete):
        """Another process edits (or deletes) a memory on one side between the sync's read and its write."""
        if a == b:
            return
        racer = b if on_peer else a

        def race(ids: list[str]) -> None:
            present = [i for i in ids if i in set(self.ids(racer))] or self.ids(racer)
            if present:
                memory_id = present[pick % len(present)]
                if delete:
                    self.delete(racer, self.ids(racer).index(memory_id))
                else:
                    self.stores[racer].update(memory_id, content=self.text(racer, memory_id, "raced"))

        sides = [StoreSide(self.stores[a], f"r{a}"), StoreSide(self.stores[b], f"r{b}")]
        sides[1 if on_peer else 0] = RacingSide(self.stores[racer], f"r{racer}", race)
        self._sync(a, b, *sides)

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), after=st.integers(0, 6))
    def killed_sync(self, a, b, after):
        """A sync stopped part-way (after ``after`` pages), as a kill would stop it."""
        if a == b:
            return
        pages = [0]

        def progress(what: str, n: int) -> None:
            pages[0] += 1
            if pages[0] > after:
                raise Killed(what)

        self._sync(a, b, StoreSide(self.stores[a], f"r{a}"), StoreSide(self.stores[b], f"r{b}"), progress)

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), commit=st.integers(1, 24))
    def sync_killed_at_a_commit(self, a, b, commit):
        """A sync stopped right before its ``commit``-th commit on either store, as a process killed
        there would leave the files: any write step (between a conflict copy and its link, between
        two edge writes, before the stamps are pinned), not only between pages. The two stores are
        then opened afresh, as the next process would."""
        if a == b:
            return
        commits = [0]

        def hook() -> bool:
            commits[0] += 1
            if commits[0] == commit:
                raise Killed(f"commit {commit}")
            return False

        for n in (a, b):
            self.stores[n].conn.set_commit_hook(hook)
        try:
            self._sync(a, b, StoreSide(self.stores[a], f"r{a}"), StoreSide(self.stores[b], f"r{b}"))
        finally:
            for n in (a, b):
                self.stores[n].conn.set_commit_hook(None)
        if commits[0] >= commit:
            for n in (a, b):
                path = self.stores[n].path
                self.stores[n].close()
                self.stores[n] = MemoryStore(path, embedder="hash", clock=self._clock(n))

    def snapshot(self, n: int):
        store = self.stores[n]
        memories = {memory_id: digest(store.get(memory_id)) for memory_id in self.ids(n)}
        edges = sorted(store.conn.execute(
            "SELECT a.id, e.type, b.id, e.strength FROM edges e JOIN memories a ON a.pk = e.src "
            "JOIN memories b ON b.pk = e.dst"))
        return memories, edges

    @precondition(lambda self: hasattr(self, "stores"))
    @invariant()
    def nothing_lost_without_a_delete(self):
        present = set().union(*(self.ids(n) for n in range(REPLICAS)))
        assert self.written - present <= self.deleted

    @precondition(lambda self: hasattr(self, "stores"))
    @invariant()
    def a_forgotten_memory_stays_gone(self):
        """A replica that knew a memory purged (forgotten here, or the purge a sync brought) never holds
        it again: not through a sync, not through an import of an export taken before."""
        for n in range(REPLICAS):
            self.purges_known[n] |= {row[0] for row in self.stores[n].conn.execute(
                "SELECT id FROM forget_purges UNION SELECT id FROM sync_tombstones WHERE purged = 1")}
            back = self.purges_known[n] & set(self.ids(n))
            assert not back, f"forgotten memories back on replica {n}: {sorted(back)}"

    def check_converged(self):
        for _ in range(2):
            for a, b in ((0, 1), (1, 2), (0, 2)):
                self.sync(a, b)
        first = self.snapshot(0)
        for n in range(1, REPLICAS):
            assert self.snapshot(n) == first, f"replica {n} differs from replica 0"
        # Every conflict copy is linked to the memory that won, while both are held (no rule here
        # removes an edge but a delete of either end): an import or a restore that stores the winner
        # again links its conflict copies again (localmem/replication/conflict_copy.py).
        unlinked = list(self.stores[0].conn.execute(
            "SELECT c.id, w.id FROM memories AS c "
            "JOIN memories AS w ON w.id = c.metadata ->> '$.sync_conflict.memory_id' "
            "WHERE NOT EXISTS (SELECT 1 FROM edges AS e "
            "WHERE e.src = c.pk AND e.dst = w.pk AND e.type = 'INVALIDATED_BY')"))
        assert not unlinked, f"conflict copies without their link to the winner: {unlinked}"
        held = {row[0] for row in self.stores[0].conn.execute("SELECT content FROM memories")}
        trashed: set[str] = set()
        for store in self.stores:
            trashed |= {json.loads(row[0]).get("content") for row in store.conn.execute("SELECT record FROM trash")}
        # Forgotten: every text of the memory, wherever it was, whenever written (a purge wins over all).
        forgotten = self.forgot_texts | {t for t, i in self.texts.items() if i in self.forgotten}
        lost = set(self.texts) - self.excused - forgotten - held - trashed
        assert not lost, f"writes lost: {sorted(lost)}"
        # An edit no deleter had seen survives every delete, whatever the clocks: it is held as a
        # memory (or a conflict copy), not only in a trash.
        binned = set(self.texts) - self.excused - forgotten - held
        assert not binned, f"edits made without seeing a delete lost to it (only in a trash): {sorted(binned)}"
        present = set(first[0])
        for memory_id, seen, _ in self.deletes:
            if memory_id in present:
                again = [t for t, i in self.changes.items() if i == memory_id and t not in seen]
                assert again, f"{memory_id} was deleted and came back, edited by no one who had not seen the delete"
        back = self.forgotten & present
        assert not back, f"forgotten memories back: {sorted(back)}"
        in_trash = self.forgotten & {i for n in range(REPLICAS) for i in self.trashed_ids(n)}
        assert not in_trash, f"forgotten memories kept in a trash: {sorted(in_trash)}"
        # A restore is an edit made now: it reaches every replica, unless deleted by one that had seen it,
        # or it lost to a later concurrent version and is kept as that memory's conflict copy (seed 3882458015).
        copies = set(self.stores[0].conn.execute(
            "SELECT metadata ->> '$.sync_conflict.memory_id', updated_at FROM memories "
            "WHERE metadata ->> '$.sync_conflict.memory_id' IS NOT NULL"))
        for memory_id, token in self.restores:
            if memory_id not in present and memory_id not in self.forgotten and token not in self.restores_undone \
                    and (memory_id, self.restored_at[token]) not in copies:
                assert any(i == memory_id and token in most for i, _, most in self.deletes), \
                    f"{memory_id} was restored from a trash and is gone, deleted by no one who had seen the restore"
        # A link removed by a replica that had seen every write of it (and of edges at all: an import,
        # a restore, an edit kept over a delete), none made after, stays removed while both ends are held.
        links = {(src, dst) for src, kind, dst, _ in first[1] if kind == "RELATES_TO"}
        for key, tick, surely in self.unlinks:
            writes = self.links.get(key, []) + self.rewrites
            if set(key) <= present and all(t < tick and change in surely for t, change in writes):
                assert key not in links, f"the link {key} is back, written again by no one who had not seen its removal"
        # The same note stored on two replicas before they synced: two memories, neither lost to the other.
        for pair in self.same_notes:
            gone = set(pair) - present - self.deleted
            assert not gone, f"one note stored on two replicas: {sorted(gone)} lost without a delete"


class Converging(ConvergesAtTeardown, Replicas):
    pass


Converging.TestCase.settings, seed = stateful_settings(examples=45, steps=25)
if seed is not None:
    seed_test(int(seed))(Converging)  # hypothesis reads the seed from the state machine class
TestReplicasConverge = Converging.TestCase
