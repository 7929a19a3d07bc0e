"""Consistency checks of one database, and the repair of what is derived.

``memories`` is the source of truth; the FTS5 rows, the tag and prefix rows
and the vector codes are derived from it (the codes from the canonical
float32 copies in ``memory_embeddings``). ``check()`` compares them all, plus
SQLite's own ``integrity_check`` and ``foreign_key_check``; ``repair()``
rebuilds the derived tables, drops rows that point nowhere and embeds
memories that have no embedding when the embedder works.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..storage import vector_index, writes
from ..storage.database import integrity_check, read_transaction, transaction
from ..storage.threads import write_text_rows
from ..embedders import UnavailableEmbedder
from ..progress import ProgressBar
from ..tags import compute_tag_prefixes
from ..text import plural as _plural
from ..validation import MAX_EMBEDDING_NORM, MIN_EMBEDDING_NORM, embedding_problem

if TYPE_CHECKING:
    import apsw

    from ..store import MemoryStore

SAMPLE_SIZE = 5
EMBED_BATCH = 256

PROBLEM = "problem"
WARNING = "warning"


@dataclass
class Check:
    """The outcome of one check; ``count == 0`` means it passed."""

    name: str
    description: str
    count: int = 0
    message: str = ""
    sample: list[str] = field(default_factory=list)
    severity: str = PROBLEM
    skipped: str | None = None  # why the check did not run

    @property
    def ok(self) -> bool:
        return self.count == 0

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "description": self.description, "ok": self.ok,
                               "count": self.count, "severity": self.severity}
        if self.message:
            out["message"] = self.message
        if self.sample:
            out["sample"] = self.sample
        if self.skipped:
            out["skipped"] = self.skipped
        return out


def _sample(rows: list[Any], label: Callable[[Any], str]) -> list[str]:
    return [label(r) for r in rows[:SAMPLE_SIZE]]


def _memory_label(row: Any) -> str:
    """A memory id, or the integer key when the memory row is gone."""
    return row[1] if len(row) > 1 and row[1] else f"pk {row[0]}"


def _vector_table_exists(store: MemoryStore) -> bool:
    if not store.conn.execute(store.sql["doctor_vector_table"]).fetchone()[0]:
        return False
    return store.conn.execute(store.sql["vector_calibration_get"]).fetchone() is not None


def embedder_usable(store: MemoryStore) -> bool:
    """Whether the store's embedder may work (not known to be unavailable)."""
    return (store.embedder is not None and store.has_vector_index and store.embedder_error is None
            and not isinstance(store.embedder, UnavailableEmbedder))


def unusable_embeddings(store: MemoryStore) -> list[tuple[int, str, str]]:
    """``(pk, memory id, problem)`` of every embedding search cannot use.

    NaN or infinite values, or a norm whose float32 cosine under- or
    overflows: the rule that refuses such vectors as input
    (``validate_embedding``), applied to rows written before it or by hand.
    SQL narrows the scan; Python decides.
    """
    dims = store.dimensions
    if dims is None:
        return []
    found = []
    for pk, memory_id, blob in store.conn.execute(store.sql["doctor_embeddings_unusable"], {
            "bytes": dims * 4, "zero": bytes(dims * 4),
            "low": MIN_EMBEDDING_NORM * 2, "high": MAX_EMBEDDING_NORM / 2}):
        problem = embedding_problem(blob, dims)
        if problem is not None:
            found.append((pk, memory_id, problem))
    return found


def _tag_checks(store: MemoryStore) -> tuple[Check, Check]:
    conn, sql = store.conn, store.sql
    tags = Check("tags", "tag rows match each memory's tags")
    prefixes = Check("tag_prefixes", "tag prefix rows match each memory's tags")
    expected_tags: dict[int, set[str]] = {}
    expected_prefixes: dict[int, set[str]] = {}
    ids: dict[int, str] = {}
    unreadable: list[str] = []
    for pk, memory_id, raw in conn.execute(sql["doctor_memory_tags"]):
        ids[pk] = memory_id
        try:
            values = json.loads(raw) if raw else []
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise ValueError
        except ValueError:
            unreadable.append(memory_id)
            values = []
        expected_tags[pk] = {v.lower() for v in values}
        expected_prefixes[pk] = set(compute_tag_prefixes(values))
    for check, query, expected in ((tags, "doctor_tag_rows", expected_tags),
                                   (prefixes, "doctor_prefix_rows", expected_prefixes)):
        actual: dict[int, set[str]] = defaultdict(set)
        for pk, value in conn.execute(sql[query]):
            actual[pk].add(value)
        bad = sorted(pk for pk in set(expected) | set(actual)
                     if expected.get(pk, set()) != actual.get(pk, set()))
        if bad:
            check.count = len(bad)
            check.sample = [ids.get(pk, f"pk {pk} (no such memory)") for pk in bad[:SAMPLE_SIZE]]
            kind = "tag" if check is tags else "tag prefix"
            check.message = f"{_plural(len(bad), 'memory', 'memories')}: {kind} rows do not match the tags"
    if unreadable:
        tags.count += len(unreadable)
        note = f"{_plural(len(unreadable), 'memory has', 'memories have')} unreadable tags JSON"
        tags.message = f"{tags.message}; {note}" if tags.message else note
        tags.sample = (tags.sample + unreadable)[:SAMPLE_SIZE]
    return tags, prefixes


def check(store: MemoryStore) -> list[Check]:
    """Run every check; returns them all (passed ones with ``count == 0``)."""
    # The store serializes users of its one connection; one read snapshot, so
    # writes by other processes during the checks cannot look like drift.
    with store.lock, read_transaction(store.conn):
        return _check(store)


def _check(store: MemoryStore) -> list[Check]:
    conn, sql = store.conn, store.sql
    results: list[Check] = []

    integrity = Check("integrity", "PRAGMA integrity_check")
    rows = integrity_check(conn)  # reads this snapshot, not what FTS5 cached from an older one
    if rows:
        integrity.count = len(rows)
        integrity.message = "SQLite integrity check failed: " + "; ".join(rows[:SAMPLE_SIZE])
        integrity.sample = rows[:SAMPLE_SIZE]
    results.append(integrity)

    foreign = Check("foreign_keys", "PRAGMA foreign_key_check")
    rows = list(conn.execute(sql["doctor_foreign_keys"]))
    if rows:
        per_table: dict[str, int] = defaultdict(int)
        for row in rows:
            per_table[row[0]] += 1
        foreign.count = len(rows)
        foreign.message = (_plural(len(rows), "row points", "rows point") + " to missing rows ("
                           + ", ".join(f"{t}: {n}" for t, n in sorted(per_table.items())) + ")")
        foreign.sample = [f"{r[0]}{'' if r[1] is None else f' rowid {r[1]}'} -> {r[2]}"
                          for r in rows[:SAMPLE_SIZE]]
    results.append(foreign)

    def rows_check(name: str, description: str, query: str, message: Callable[[int], str],
                   label: Callable[[Any], str] = _memory_label, severity: str = PROBLEM,
                   bindings: dict[str, Any] | None = None,
                   slots: dict[str, str] | None = None) -> Check:
        found = list(conn.execute(sql.compose(query, **(slots or {})), bindings or {}))
        item = Check(name, description, severity=severity)
        if found:
            item.count = len(found)
            item.message = message(len(found))
            item.sample = _sample(found, label)
        results.append(item)
        return item

    def has(n: int) -> str:
        return "has" if n == 1 else "have"

    def verb(n: int, word: str) -> str:
        return word + "s" if n == 1 else word

    rows_check("fts_missing", "every memory has a full-text row", "doctor_fts_missing",
               lambda n: f"{_plural(n, 'memory', 'memories')} {has(n)} no full-text (FTS) row")
    rows_check("fts_orphans", "every full-text row belongs to a memory", "doctor_fts_orphans",
               lambda n: f"{_plural(n, 'full-text row', 'full-text rows')} {verb(n, 'belong')} to no memory",
               label=lambda r: f"rowid {r[0]}")
    results.extend(_tag_checks(store))
    rows_check("edges_dangling", "every edge joins two memories", "doctor_edges_dangling",
               lambda n: f"{_plural(n, 'edge', 'edges')} {verb(n, 'point')} to a missing memory",
               label=lambda r: f"{r[3] or 'pk ' + str(r[0])} -[{r[2]}]-> {r[4] or 'pk ' + str(r[1])}")
    rows_check("embeddings_orphans", "every embedding belongs to a memory", "doctor_embeddings_orphans",
               lambda n: f"{_plural(n, 'embedding', 'embeddings')} {verb(n, 'belong')} to no memory",
               label=lambda r: f"pk {r[0]}")

    vector_names = ("vector_index", "embeddings_bad_length", "embeddings_unusable", "vectors_missing",
                    "vectors_orphans", "vectors_differ", "embeddings_missing", "token_codes_bad")
    if store.dimensions is None:
        for name in vector_names:
            results.append(Check(name, name.replace("_", " "), skipped="no vector index (embedder 'none')"))
        return results
    table = Check("vector_index", "the vector code index and its calibration exist")
    if not _vector_table_exists(store):
        table.count = 1
        table.message = "the vector index (vector_codes and its calibration) is missing"
    results.append(table)
    dims = store.dimensions
    rows_check("embeddings_bad_length", f"every embedding has {dims} dimensions",
               "doctor_embeddings_bad_length",
               lambda n: f"{_plural(n, 'embedding', 'embeddings')} {'does' if n == 1 else 'do'} "
                         f"not hold {dims} float32 values",
               bindings={"bytes": dims * 4})
    rows_check("token_codes_bad", "every memory's token codes hold one bit per dimension per token",
               "doctor_token_codes_bad",
               lambda n: f"{_plural(n, 'memory', 'memories')} {has(n)} damaged token codes "
                         "(recall ignores them; `doctor --repair` drops them, `reembed` makes them again)",
               bindings={"width": (dims + 7) // 8})
    unusable = unusable_embeddings(store)
    usable_check = Check("embeddings_unusable", "every embedding is finite with a norm float32 cosines can use")
    if unusable:
        n = len(unusable)
        usable_check.count = n
        usable_check.message = (f"{_plural(n, 'embedding', 'embeddings')} cannot be used for search "
                                f"(first: {unusable[0][2]})")
        usable_check.sample = [memory_id for _, memory_id, _ in unusable[:SAMPLE_SIZE]]
    results.append(usable_check)
    if table.ok:
        rows_check("vectors_missing", "every embedding has a vector-index row", "doctor_vectors_missing",
                   lambda n: f"{_plural(n, 'embedding', 'embeddings')} {has(n)} no vector-index row")
        rows_check("vectors_orphans", "every vector-index row has an embedding", "doctor_vectors_orphans",
                   lambda n: f"{_plural(n, 'vector-index row', 'vector-index rows')} {has(n)} no embedding",
                   label=lambda r: f"pk {r[0]}")
        if dims % 8 == 0:
            rows_check("vectors_differ", "vector-index rows are the codes of their embeddings",
                       "doctor_vectors_differ",
                       lambda n: f"{_plural(n, 'vector-index row', 'vector-index rows')} "
                                 f"{verb(n, 'differ')} from the stored embedding",
                       bindings=vector_index.doctor_bindings(dims),
                       slots={"code_input": "e.embedding"})
        else:
            results.append(Check("vectors_differ", "vectors differ",
                                 skipped="padded codes are not compared"))
    else:
        for name in ("vectors_missing", "vectors_orphans", "vectors_differ"):
            results.append(Check(name, name.replace("_", " "), skipped="the vector index is missing"))
    usable = embedder_usable(store)
    missing = rows_check(
        "embeddings_missing", "every memory has an embedding", "doctor_embeddings_missing",
        lambda n: f"{_plural(n, 'memory', 'memories')} {has(n)} no embedding, "
                  f"so vector search cannot find {'it' if n == 1 else 'them'}",
        severity=PROBLEM if usable else WARNING)
    if missing.count and not usable:
        reason = store.embedder_error or getattr(store.embedder, "reason", None) or "no embedder"
        missing.message += f" (the embedder is unavailable: {reason})"
    return results


def problems(checks: list[Check]) -> list[Check]:
    return [c for c in checks if not c.ok and c.severity == PROBLEM]


def _drain(cursor: apsw.Cursor) -> None:
    for _ in cursor:
        pass


def repair(store: MemoryStore, *, progress: bool = False) -> dict[str, Any]:
    """Rebuild the derived tables and fill in missing embeddings; returns what was done.

    One transaction rebuilds the FTS rows, the tag and prefix rows and the
    vector code index (recalibrated), and drops edges and embeddings that point nowhere (and
    embeddings of the wrong length or that search cannot use). Memories
    without an embedding are then embedded in batches when the embedder
    works; an unusable embedding that cannot be replaced stays dropped, so
    its memory is served without a vector (keyword, tag and graph channels).
    """
    conn, sql = store.conn, store.sql
    done: dict[str, Any] = {}
    dims = store.dimensions
    unusable: list[tuple[int, str, str]] = []
    with store.lock, transaction(conn):
        _drain(conn.execute(sql["repair_edges_dangling"]))
        done["dangling_edges_removed"] = conn.changes()
        if dims is not None:
            _drain(conn.execute(sql["repair_embeddings_invalid"], {"bytes": dims * 4}))
            done["invalid_embeddings_removed"] = conn.changes()
            _drain(conn.execute(sql["repair_token_codes_invalid"], {"width": (dims + 7) // 8}))
            done["invalid_token_codes_removed"] = conn.changes()
            unusable = unusable_embeddings(store)
            for pk, _memory_id, _problem in unusable:
                conn.execute(sql["embedding_delete"], {"pk": pk})
        _drain(conn.execute(sql["repair_fts"]))
        done["fts_rows_rebuilt"] = write_text_rows(conn, sql, None)
        _drain(conn.execute(sql["repair_tags_clear"]))
        retagged = 0
        for pk, _memory_id, raw in list(conn.execute(sql["doctor_memory_tags"])):
            try:
                values = json.loads(raw) if raw else []
            except ValueError:
                continue
            if isinstance(values, list) and all(isinstance(v, str) for v in values):
                writes._index_tags(conn, sql, pk, values)
                retagged += 1
        done["memories_retagged"] = retagged
        if dims is not None:
            done["vector_rows_rebuilt"] = vector_index.rebuild(conn, sql, dims)
    done["memories_embedded"] = 0
    embedded: set[int] = set()
    if dims is not None and store.embedder is not None:
        with store.lock:
            missing = [(pk, content) for pk, _id, content in conn.execute(sql["doctor_embeddings_missing"])]
        bar = ProgressBar(len(missing), "embedding") if progress and missing else None
        try:
            for start in range(0, len(missing), EMBED_BATCH):
                batch = missing[start:start + EMBED_BATCH]
                space = store.backend.vector_space()
                vectors = store.embed_texts([content for _, content in batch])
                if vectors is None:
                    done["embedder_error"] = store.embedder_error or "the embedder is unavailable"
                    break
                with store.lock, transaction(conn):
                    if store.backend.vector_space_moved(space):  # a reembed swapped the model meanwhile
                        vectors = store.embed_texts([content for _, content in batch])
                        if vectors is None:
                            done["embedder_error"] = store.embedder_error or "the embedder is unavailable"
                            break
                    for (pk, _), vector in zip(batch, vectors):
                        writes._set_embedding(conn, sql, pk, vector, True)
                        embedded.add(pk)
                done["memories_embedded"] += len(batch)
                if bar is not None:
                    bar.advance(len(batch))
        finally:
            if bar is not None:
                bar.close()
    if dims is not None and unusable:
        replaced = [memory_id for pk, memory_id, _ in unusable if pk in embedded]
        dropped = [memory_id for pk, memory_id, _ in unusable if pk not in embedded]
        done["unusable_embeddings_removed"] = len(unusable)
        done["unusable_embeddings_reembedded"] = len(replaced)
        done["unusable_embeddings_dropped"] = len(dropped)  # served without a vector
        done["unusable_embeddings_sample"] = {"reembedded": replaced[:SAMPLE_SIZE],
                                              "dropped": dropped[:SAMPLE_SIZE]}
    return done
