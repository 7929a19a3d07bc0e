"""The stateful sync model's export and import rules: ``export``, an import of an export taken earlier, and the two
stories export sync stamps are for (an import, an edit and a delete before any sync; a first sync after an import).
``tests/test_sync_stateful.py``'s ``Replicas`` inherits them (Hypothesis collects rules by name, so where they are
written changes no example); they read and write its model state (``self.exports``, ``self.seen``, ...).
"""

from __future__ import annotations

import json

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from localmem.maintenance.export import dump_line, iter_export
from localmem.maintenance.importer import ImportLineError, import_jsonl
from localmem.replication.sync_rules import digest
from localmem.replication.sync_side import StoreSide

REPLICAS = 3


class ImportRules:
    """Export and import steps of the three-replica model (a mixin: no state of its own)."""

    @rule(n=st.integers(0, REPLICAS - 1))
    def export(self, n):  # the last few are kept, each with what its replica had seen (surely, at most)
        self.exports = (self.exports + [[dump_line(value) for value in iter_export(self.stores[n])]])[-3:]
        self.export_seen = (self.export_seen + [(frozenset(self.seen_surely[n]), frozenset(self.seen[n]))])[-3:]

    @precondition(lambda self: self.exports)
    @rule(n=st.integers(0, REPLICAS - 1), which=st.integers(0, 2), update=st.booleans())
    def import_an_export(self, n, which, update):
        """`localmem import --skip-existing` (or `--update`) of an export taken earlier, on any replica.
        A refused line (a forgotten memory, or an edge to one) is removed, as its message says, and the
        import run again."""
        lines = list(self.exports[which % len(self.exports)])
        surely, most = self.export_seen[which % len(self.exports)]
        store = self.stores[n]
        before = {memory_id: store.get(memory_id) for memory_id in self.ids(n)}
        file_stamps = {value["id"]: value["sync"]["stamp"] for value in map(json.loads, lines)
                       if value.get("kind") == "memory" and "sync" in value}
        while True:
            try:
                import_jsonl(store, lines, skip_existing=not update, update=update)
                break
            except ImportLineError as error:
                refused = json.loads(lines[error.line - 1])
                if "was forgotten" in str(error):
                    assert refused["id"] in self.forgotten, str(error)
                else:
                    assert "edge endpoint not found" in str(error), str(error)
                del lines[error.line - 1]
                header = json.loads(lines[0])
                header["memories" if refused["kind"] == "memory" else "edges"] -= 1
                lines[0] = dump_line(header)
        self.rewrites.append(self.edge_change(n))  # the file's edges
        stamps = dict(store.conn.execute("SELECT m.id, c.hlc FROM memories AS m "
                                         "JOIN memory_changes AS c ON c.pk = m.pk"))
        for memory_id in self.ids(n):
            record, old = store.get(memory_id), before.get(memory_id)
            if old is None or digest(record) != digest(old):
                self.change(n, memory_id, "i")  # a new version, made after seeing what replica n held
                if old is not None and record["content"] != old["content"]:
                    self.excused |= {t for t in self.seen[n] if self.texts.get(t) == memory_id or t == old["content"]}
                if old is not None and any(i == memory_id and at == record["updated_at"] and token not in
                                           self.seen_surely[n] for i, at, token in self.deleted_versions):
                    # --update wrote back the very version a delete not surely seen here deleted, over the
                    # restores held here: the next sync meeting that delete trashes it (docs/sync.md, seed 742428944)
                    self.restores_undone |= {t for i, t in self.restores if i == memory_id and t in self.seen[n]}
                if record["content"] in self.texts:  # held here now: seen, as a sync would have carried it
                    self.seen[n].add(record["content"])
                    self.seen_surely[n].add(record["content"])
                    # The very version a restore made (its updated_at, which an export keeps): a delete
                    # of it here covers that restore by the updated_at rule (docs/sync.md; seed 516625255)
                    self.seen[n] |= {t for i, t in self.restores
                                     if i == memory_id and self.restored_at[t] == record["updated_at"]}
                    if file_stamps.get(memory_id) is None or stamps.get(memory_id) != file_stamps[memory_id]:
                        # written as a version of n's own (no stamp taken: import_stamps.py): to the sync,
                        # another store's version than the one the file names
                        self.imported_as.setdefault(record["content"], set()).add(record["updated_at"])
                    else:  # the exported version, with what its replica had seen of the memory (joined)
                        self.seen_surely[n] |= {t for t in surely if self.changes.get(t) == memory_id}
                        self.seen[n] |= {t for t in most if self.changes.get(t) == memory_id}

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6),
          words=st.text("xyz", min_size=1, max_size=6), update=st.booleans(), first=st.integers(0, 2))
    def import_edit_delete(self, a, b, pick, words, update, first):
        """The story of import_stamps.py: replica ``a`` exports, ``b`` imports the file, edits a memory
        and deletes it, before any sync; no version ``a`` had seen may come back. ``first``: 1, ``a``
        edits the memory before its export (replicas it synced with hold an older version it had
        seen); 2, the third replica edits it and syncs with ``a`` first, and meets ``b``'s delete
        right after it (the version it holds is covered only by the summary the export carried)."""
        if a == b:
            return
        c = 3 - a - b  # the third replica (REPLICAS is 3: 0 + 1 + 2)
        ids = sorted(set(self.ids(a)) & set(self.ids(c))) if first == 2 else self.ids(a)
        if not ids:
            return
        memory_id = ids[pick % len(ids)]
        if first == 2:
            self.stores[c].update(memory_id, content=self.text(c, memory_id, words))
            self.sync(a, c)
        if first and memory_id in self.ids(a):
            self.stores[a].update(memory_id, content=self.text(a, memory_id, words))
        self.export(a)
        self.import_an_export(b, len(self.exports) - 1, update)
        if memory_id in self.ids(b):
            self.stores[b].update(memory_id, content=self.text(b, memory_id, words))
            self.delete(b, self.ids(b).index(memory_id))
            if first == 2:
                self.sync(b, c)

    @rule(a=st.integers(0, REPLICAS - 1), b=st.integers(0, REPLICAS - 1), pick=st.integers(0, 10 ** 6),
          words=st.text("xyz", min_size=1, max_size=6), through=st.booleans())
    def import_then_exporter_edits(self, a, b, pick, words, through):
        """Replica ``a`` exports, ``b`` imports the file (``skip_existing``), ``a`` edits a memory of
        it, then ``b`` meets the edit: syncing with ``a``, or ``through`` the third replica after it
        synced with ``a``. Where ``b`` holds the exported version (its stamp is the line's), ``b``
        never changed it and ``a`` had seen it: that sync keeps no conflict copy of it."""
        ids = self.ids(a)
        if a == b or not ids:
            return
        memory_id = ids[pick % len(ids)]
        self.export(a)
        line = next(value for value in map(json.loads, self.exports[-1]) if value.get("id") == memory_id)
        self.import_an_export(b, len(self.exports) - 1, False)
        held = self.stores[b].conn.execute("SELECT c.hlc FROM memories AS m JOIN memory_changes AS c "
                                           "ON c.pk = m.pk WHERE m.id = ?", (memory_id,)).fetchone()
        self.stores[a].update(memory_id, content=self.text(a, memory_id, words))
        meets = 3 - a - b if through else a  # the replica b meets the edit from (REPLICAS is 3)
        if through:
            self._sync(a, meets, StoreSide(self.stores[a], f"r{a}"), StoreSide(self.stores[meets], f"r{meets}"))
        summary = self._sync(meets, b, StoreSide(self.stores[meets], f"r{meets}"), StoreSide(self.stores[b], f"r{b}"))
        if summary is not None and held is not None and held[0] == line.get("sync", {}).get("stamp"):
            assert memory_id not in {c["id"] for c in summary.conflicts}, \
                f"{memory_id}: a conflict copy of the version imported on replica {b}, which it never changed"
