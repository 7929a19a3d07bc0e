"""Three replicas, random edits, deletes, edges and syncs (issue 42, item 8, in part).

A Hypothesis state machine drives three stores with random stores, edits, deletes, edges,
supersessions, clock skews of up to hours (a store's clock, and a delete stamped by a skewed
clock) and random sync pairs and directions. After a final round of syncs every replica must
hold the same memories (every synced field), the same edges, and a write may be missing only if
a delete removed it. Not yet modelled: causal "no write lost" beyond that, writers during a
sync, kills mid-sync (tests/test_sync.py covers a kill; test_sync_writers.py a racing writer).
Bounded here: 30 derandomized examples (the same ones every run, a few seconds).
``python benchmarks/replication/sync_stateful.py --examples 500`` runs fresh random ones
(``LOCALMEM_STATEFUL_EXAMPLES``, ``_STEPS`` and ``_SEED``). Shrinking is off (it took over
five minutes per failure here).
"""

from __future__ import annotations

import os
import tempfile
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
SKEWS = st.sampled_from([timedelta(0), timedelta(hours=3), -timedelta(hours=2), timedelta(minutes=1)])


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

    @rule(n=st.integers(0, REPLICAS - 1), text=st.text("abcdefgh ", min_size=1, max_size=12))
    def store(self, n, text):
        self.written.add(self.stores[n].store(f"note {text}"))

    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6), text=st.text("xyz", min_size=1, max_size=6))
    def edit(self, n, pick, text):
        ids = self.ids(n)
        if ids:
            self.stores[n].update(ids[pick % len(ids)], content=f"edited {text}")

    @rule(n=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6))
    def delete(self, n, pick):
        ids = self.ids(n)
        if ids:
            memory_id = ids[pick % len(ids)]
            self.stores[n].delete(memory_id)
            self.deleted.add(memory_id)
            # The tombstone time comes from SQLite's clock: stamp it as this replica's clock would.
            stamp = self.stores[n].now().isoformat()
            self.stores[n].conn.execute("UPDATE sync_tombstones SET deleted_at = ? WHERE id = ?", (stamp, memory_id))

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

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1))
    def sync(self, a, b):
        if a != b:
            summary = sync_stores(StoreSide(self.stores[a], f"r{a}"), StoreSide(self.stores[b], f"r{b}"),
                                  allow_deletes=10 ** 6)
            assert summary.refused == [], summary.refused

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
        originals = {i for i in self.written}
        assert originals - present <= self.deleted

    def check_converged(self):
        for _ in range(2):
            for a, b in ((0, 1), (1, 2), (0, 2)):
                self.sync(a, b)
        first = self.snapshot(0)
        for n in range(1, REPLICAS):
            assert self.snapshot(n) == first, f"replica {n} differs from replica 0"


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
