"""The stateful sync model's rollback rule: a replica's file put back from a snapshot taken earlier (the same
file, identity and home: a file-system snapshot restored, or the file copied back by hand), between an edit it
synced and its next edits. ``tests/test_sync_stateful.py``'s ``Replicas`` inherits it (Hypothesis collects rules by
name); it reads and writes that model's state (``self.stores``, ``self.seen``, ...).

The story it runs: replica ``a`` is snapshotted, edits a memory it shares with ``b`` and syncs it to ``b``; ``a``
is rolled back, edits the memory again (once or twice, perhaps then deletes it) and syncs with ``b``. What ``a``
knew is what the snapshot knew: the edit it lost is one it has not seen, so the model's end checks require it
kept (a conflict copy, or the memory kept over the delete) unless a replica that had seen it moved on. The rule
ends with that sync: a replica that first meets ``a``'s later edits through a third store, before ``a`` and
``b`` sync, cannot tell ``a`` was rolled back (docs/sync.md, Limits), and is not what this rule drives.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import rule

from localmem import MemoryStore
from sync_model_imports import REPLICAS


class RollbackRules:
    """The rollback step of the three-replica model (a mixin: no state of its own)."""

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6),
          edits=st.integers(1, 2), then_delete=st.booleans())
    def roll_back_after_a_synced_edit(self, a, b, pick, edits, then_delete):
        shared = sorted(set(self.ids(a)) & set(self.ids(b)))
        if a == b or not shared:
            return
        memory_id = shared[pick % len(shared)]
        knew = (set(self.seen[a]), set(self.seen_surely[a]))  # what the snapshot holds
        with tempfile.TemporaryDirectory(prefix="localmem-snapshot-") as folder:
            saved = Path(folder) / "snapshot.db"
            self.stores[a].conn.execute("VACUUM INTO ?", (str(saved),))
            self.stores[a].update(memory_id, content=self.text(a, memory_id, "before the rollback"))
            self.sync(a, b)
            self.put_back(a, saved)
        self.seen[a], self.seen_surely[a] = knew
        for _ in range(edits):
            self.stores[a].update(memory_id, content=self.text(a, memory_id, "after the rollback"))
        if then_delete:
            self.delete(a, self.ids(a).index(memory_id))
        self.sync(a, b)

    def put_back(self, n: int, saved: Path) -> None:
        """Write the snapshot's bytes over replica ``n``'s file in place (the same inode), as a rollback does."""
        path = self.stores[n].path
        self.stores[n].close()
        with open(saved, "rb") as source, open(path, "r+b") as target:
            target.write(source.read())
            target.truncate()
        for suffix in ("-wal", "-shm"):
            if os.path.exists(f"{path}{suffix}"):
                os.unlink(f"{path}{suffix}")
        self.stores[n] = MemoryStore(path, embedder="hash", clock=self._clock(n))
