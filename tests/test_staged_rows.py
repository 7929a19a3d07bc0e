"""A batch's memory rows and vector codes go in through a private staging table (storage/staged_rows.py).

What is stored must be what the one-statement-per-row path stores: the same rows, the same
change numbers and stamps in key order, the same code numbers and counter. A failure part-way
leaves nothing of the batch behind, and no other connection ever sees the staging tables.
"""

from __future__ import annotations

import hashlib
import uuid

import apsw
import pytest

from localmem import StorageError, ValidationError
from localmem.storage import staged_rows, vector_index
from localmem.storage.database import transaction
from tests.store_helpers import new_store

# Every table a bulk write fills whose rows can be compared between two stores (the store's
# random id is masked where it ends a stamp; meta and the calibration hold wall-clock times).
COMPARED = ("memories", "memory_changes", "memory_dedup_keys", "memory_embeddings", "memory_tags",
            "memory_tag_prefixes", "memory_metadata_terms", "token_codes", "vector_codes",
            "vector_clock", "sync_clock", "sync_tombstones")


def items(n: int) -> list[dict]:
    return [{"id": str(uuid.UUID(int=i + 1, version=4)), "content": f"note {i} about topic {i % 7}",
             "tags": [f"t{i % 3}", "project:x"], "metadata": {"session": f"s{i // 20}"} if i % 3 == 0 else {},
             "timestamp": f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}+00:00"} for i in range(n)]


def digests(store) -> dict[str, str]:
    own = store.conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0]
    out = {}
    for table in COMPARED:
        h = hashlib.sha256()
        for row in store.conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2"):
            h.update(repr(row).replace(own, "<own>").encode())
        out[table] = h.hexdigest()
    h = hashlib.sha256()
    for row in store.conn.execute("SELECT rowid, * FROM memories_fts ORDER BY rowid"):
        h.update(repr(row).encode())
    out["memories_fts"] = h.hexdigest()
    return out


def test_staged_batches_store_what_row_by_row_statements_store(tmp_path, monkeypatch):
    """The same items in calls of 40 and 30, once staged in chunks of 8 (several chunks per call,
    the counters carried across them) and once one statement per row: every table alike. The
    second call does not recalibrate (70 codes < twice the 40 checked), so its codes keep the
    numbers the insert gave them."""
    monkeypatch.setattr(staged_rows, "CHUNK_ROWS", 8)
    calls = (items(70)[:40], items(70)[40:])
    staged = new_store(str(tmp_path / "staged.db"))
    for call in calls:
        staged.store_many(call)
    monkeypatch.setattr(staged_rows, "STAGE_FROM_ROWS", 10**9)
    direct = new_store(str(tmp_path / "direct.db"))
    for call in calls:
        direct.store_many(call)
    assert digests(staged) == digests(direct)
    # The code numbers and the counter the index caches read: one step per code, in key order.
    seqs = [s for (s,) in staged.conn.execute("SELECT seq FROM vector_codes WHERE pk > 40 ORDER BY pk")]
    clock_seq, clock_rows = staged.conn.execute("SELECT seq, rows FROM vector_clock").fetchone()
    assert seqs == list(range(clock_seq - 29, clock_seq + 1)) and clock_rows == 70
    changes = [s for (s,) in staged.conn.execute("SELECT seq FROM memory_changes ORDER BY pk")]
    assert changes == list(range(changes[0], changes[0] + 70))


def test_a_batch_failing_in_a_later_chunk_leaves_nothing_of_it(tmp_path, monkeypatch):
    """A row of the second chunk refused by SQLite: none of the batch's rows, codes or log entries
    stay, the staging tables are empty, and the next batch is numbered as if none had been tried."""
    monkeypatch.setattr(staged_rows, "CHUNK_ROWS", 16)
    store = new_store(str(tmp_path / "a.db"))
    store.store_many(items(20))
    before = digests(store)
    store.conn.execute("CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.memories "
                       "WHEN new.content = 'note 40 about topic 5' BEGIN SELECT RAISE(ABORT, 'refused'); END")
    with pytest.raises((apsw.ConstraintError, StorageError, ValidationError)):
        store.store_many(items(60)[20:])
    assert digests(store) == before
    for stage in ("memory_stage", "vector_codes_stage"):
        assert store.conn.execute(f"SELECT count(*) FROM temp.{stage}").fetchone()[0] == 0
    store.conn.execute("DROP TRIGGER temp.refuse")
    store.store_many(items(60)[20:])
    reference = new_store(str(tmp_path / "b.db"))
    reference.store_many(items(20))
    reference.store_many(items(60)[20:])
    assert digests(store) == digests(reference)


def test_the_staging_tables_are_private_to_the_writing_connection(tmp_path):
    """The file's schema gains nothing, and another connection finds no staging table."""
    path = str(tmp_path / "a.db")
    store = new_store(path)
    store.store_many(items(50))
    other = apsw.Connection(path)
    names = {name for (name,) in other.execute("SELECT name FROM sqlite_schema")}
    assert not {"memory_stage", "vector_codes_stage"} & names
    assert not list(other.execute("SELECT name FROM sqlite_temp_schema"))
    assert other.execute("SELECT count(*) FROM memories").fetchone()[0] == 50


def test_a_few_rows_take_the_one_statement_path_and_agree(tmp_path):
    """Below STAGE_FROM_ROWS no staging table is made; the rows are the staged path's."""
    few = new_store(str(tmp_path / "few.db"))
    few.store_many(items(staged_rows.STAGE_FROM_ROWS - 1))
    assert not list(few.conn.execute("SELECT name FROM sqlite_temp_schema WHERE name LIKE '%stage'"))
    assert few.conn.execute("SELECT count(*) FROM vector_codes").fetchone()[0] == staged_rows.STAGE_FROM_ROWS - 1


def test_a_recode_numbers_the_codes_as_the_row_by_row_update_did(tmp_path, monkeypatch):
    """Every code re-encoded after a forced recalibration, one memory's code missing (a damaged
    index: its vector is not re-encoded and takes no number): the codes, their numbers and the
    counter as the one-statement-per-code path leaves them."""
    monkeypatch.setattr(staged_rows, "CHUNK_ROWS", 16)
    stores = {}
    for label, first_staged in (("staged", 8), ("direct", 10**9)):
        monkeypatch.setattr(staged_rows, "STAGE_FROM_ROWS", 8)
        store = new_store(str(tmp_path / f"{label}.db"))
        store.store_many(items(100))
        monkeypatch.setattr(staged_rows, "STAGE_FROM_ROWS", first_staged)
        with transaction(store.conn):
            store.conn.execute("DELETE FROM vector_codes WHERE pk = 50")
            assert vector_index.recalibrate(store.conn, store.sql, store.dimensions, force=True)
        stores[label] = store
    rows = {label: list(s.conn.execute("SELECT pk, seq, codes FROM vector_codes ORDER BY pk"))
            for label, s in stores.items()}
    assert rows["staged"] == rows["direct"] and len(rows["staged"]) == 99
    clocks = {label: s.conn.execute("SELECT seq, rows FROM vector_clock").fetchone() for label, s in stores.items()}
    assert clocks["staged"] == clocks["direct"]
    seqs = [seq for _pk, seq, _codes in rows["staged"]]
    assert seqs == list(range(clocks["staged"][0] - 98, clocks["staged"][0] + 1))
