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

What a replica "has seen" is tracked through syncs, as a most and a least (a killed sync may
have carried anything, a write racing a sync may wait for the next one), each check using the
bound that cannot make it fail wrongly. Bounded here: 30 derandomized examples
(the same ones every run, a few seconds). ``python benchmarks/replication/sync_stateful.py
--examples 500`` runs fresh random ones (``LOCALMEM_STATEFUL_EXAMPLES``, ``_STEPS``, ``_SEED``).
Shrinking is off (it took over five minutes per failure here).
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as seed_test
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from localmem import MemoryStore
from localmem.replication.sync import sync_stores
from localmem.replication.sync_rules import digest
from localmem.replication.sync_side import StoreSide

REPLICAS = 3
SKEWS = st.sampled_from([timedelta(0), timedelta(hours=3), -timedelta(hours=2), timedelta(minutes=1),
                         timedelta(hours=7)])


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


class Replicas(RuleBasedStateMachine):
    @initialize(skews=st.lists(SKEWS, min_size=REPLICAS, max_size=REPLICAS))
    def open_stores(self, skews):
        self.folder = tempfile.TemporaryDirectory(prefix="localmem-stateful-")
        self.offsets = list(skews)
        self.ticks = [0]
        self.stores = [MemoryStore(Path(self.folder.name) / f"r{n}.db", embedder="hash",
                                   clock=self._clock(n)) for n in range(REPLICAS)]
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
        self.deletes: list[tuple[str, frozenset[str]]] = []  # (id, what the deleting replica had seen)
        self.serial = 0

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

    def text(self, n: int, memory_id: str, words: str) -> str:
        """Write a new, unique text to ``memory_id`` on replica ``n`` (new or edited)."""
        self.serial += 1
        text = f"t{self.serial} {words}".strip()  # as the store keeps it
        self.texts[text] = self.changes[text] = memory_id
        held = {row[0] for row in self.stores[n].conn.execute("SELECT content FROM memories WHERE id = ?", (memory_id,))}
        # Overwritten having been seen: each text of this memory, or the one it holds (a conflict copy's).
        self.excused |= {t for t in self.seen[n] if self.texts.get(t) == memory_id or t in held}
        self.seen[n].add(text)
        self.seen_surely[n].add(text)
        return text

    @rule(n=st.integers(0, REPLICAS - 1), words=st.text("abcdefgh ", min_size=1, max_size=12))
    def store(self, n, words):
        memory_id = str(uuid.uuid4())
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
            content = self.stores[n].get(memory_id)["content"]
            self.stores[n].delete(memory_id)
            self.deleted.add(memory_id)
            # Deleted having seen these: each text of this memory (or held by it, a conflict copy).
            self.excused |= {t for t in self.seen[n] if self.texts.get(t) == memory_id or t == content}
            self.deletes.append((memory_id, frozenset(self.seen_surely[n])))

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

    @rule(n=st.integers(0, REPLICAS - 1), skew=SKEWS)
    def clock_jumps(self, n, skew):
        self.offsets[n] = skew  # a clock set right, or wrong, between two changes

    def _sync(self, a: int, b: int, local: StoreSide, peer: StoreSide, progress=None) -> None:
        surely = self.seen_surely[a] | self.seen_surely[b]  # what a finished sync carries both ways
        try:
            summary = sync_stores(local, peer, allow_deletes=10 ** 6, progress=progress)
        except Killed:
            pass
        else:
            assert summary.refused == [], summary.refused
            self.seen_surely[a] |= surely  # not a raced write: made after the sync's read, it may wait
            self.seen_surely[b] |= surely
        union = self.seen[a] | self.seen[b]
        self.seen[a], self.seen[b] = set(union), set(union)

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

    def check_converged(self):
        for _ in range(2):
            for a, b in ((0, 1), (1, 2), (0, 2)):
                self.sync(a, b)
        first = self.snapshot(0)
        for n in range(1, REPLICAS):
            assert self.snapshot(n) == first, f"replica {n} differs from replica 0"
        # Every conflict copy is linked to the memory that won, while both are held (no rule here
        # removes an edge but a delete of either end).
        unlinked = list(self.stores[0].conn.execute(
            "SELECT c.id FROM memories AS c JOIN memories AS w ON w.id = c.metadata ->> '$.sync_conflict.memory_id' "
            "WHERE NOT EXISTS (SELECT 1 FROM edges AS e WHERE e.src = c.pk AND e.dst = w.pk AND e.type = 'INVALIDATED_BY')"))
        assert not unlinked, f"conflict copies without their link to the winner: {unlinked}"
        held = {row[0] for row in self.stores[0].conn.execute("SELECT content FROM memories")}
        trashed: set[str] = set()
        for store in self.stores:
            trashed |= {json.loads(row[0]).get("content") for row in store.conn.execute("SELECT record FROM trash")}
        lost = set(self.texts) - self.excused - held - trashed
        assert not lost, f"writes lost: {sorted(lost)}"
        # An edit no deleter had seen survives every delete, whatever the clocks: it is held as a
        # memory (or a conflict copy), not only in a trash.
        binned = set(self.texts) - self.excused - held
        assert not binned, f"edits made without seeing a delete lost to it (only in a trash): {sorted(binned)}"
        present = set(first[0])
        for memory_id, seen in self.deletes:
            if memory_id in present:
                again = [t for t, i in self.changes.items() if i == memory_id and t not in seen]
                assert again, f"{memory_id} was deleted and came back, edited by no one who had not seen the delete"


class Converging(Replicas):
    def teardown(self):
        try:
            if hasattr(self, "stores"):
                self.check_converged()
        finally:
            super().teardown()


examples = int(os.environ.get("LOCALMEM_STATEFUL_EXAMPLES") or 30)
steps = int(os.environ.get("LOCALMEM_STATEFUL_STEPS") or 25)
seed = os.environ.get("LOCALMEM_STATEFUL_SEED")  # set: fresh random examples from that seed (the benchmark)
Converging.TestCase.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow], database=None,
                                        derandomize=seed is None, phases=[Phase.explicit, Phase.generate])
if seed is not None:
    seed_test(int(seed))(Converging)  # hypothesis reads the seed from the state machine class
TestReplicasConverge = Converging.TestCase
