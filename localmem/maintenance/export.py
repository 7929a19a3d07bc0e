"""JSONL export: a dump of memories, embeddings and edges that ``importer.py`` imports.

The format (a header line, then memory lines, then edge lines) and the import
policy are described in ``importer.py``.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import ValidationError
from .copies import record_copy
from ..storage.database import MEMORY_PATH, read_transaction
from ..storage.files import refuse_database_file, refuse_special_output, replacing_file
from ..storage.records import rows_as_dicts, to_record
from .export_header import make_header
from .export_tokens import codes_field
from .import_stamps import FIELD, sync_field

if TYPE_CHECKING:
    from ..store import MemoryStore


# Characters that str.splitlines() (and JavaScript) treat as line breaks but
# JSON leaves unescaped; escaped so every record stays on one physical line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def dump_line(value: dict[str, Any]) -> str:
    """One JSONL line: compact UTF-8, with every line-breaking character escaped."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).translate(_LINE_BREAKS)


def decode_embedding(blob: bytes | None) -> list[float] | None:
    """The float32 blob of ``memory_embeddings`` as exact Python floats."""
    if blob is None:
        return None
    return array("f", bytes(blob)).tolist()


def iter_export(store: MemoryStore, *, stamps: bool = True) -> Iterator[dict[str, Any]]:
    """The header, every memory line, then every edge line, as dicts (read in one snapshot).
    ``stamps``: each memory line carries its sync stamp (``import_stamps.py``; an older localmem
    refuses the field: ``stamps=False`` writes a file it imports)."""
    with read_transaction(store.conn):  # one snapshot: memories and edges from the same moment
        counts = next(rows_as_dicts(store.conn.execute(store.sql["export_counts"])))
        yield make_header(store, counts["memories"], counts["edges"], counts["embeddings"])
        for row in rows_as_dicts(store.conn.execute(store.sql["export_memories"])):
            record = to_record(row)
            line = {"kind": "memory", **record, "embedding": decode_embedding(row["embedding"]),
                    "token_codes": codes_field(row["token_count"], row["token_codes"])}
            stamp = sync_field(row["sync_hlc"], record, row["sync_seen"]) if stamps else None
            yield line if stamp is None else {**line, FIELD: stamp}
        for row in rows_as_dicts(store.conn.execute(store.sql["export_edges"])):
            yield {
                "kind": "edge",
                "memory1_id": row["memory1_id"],
                "memory2_id": row["memory2_id"],
                "relation_type": row["relation_type"],
                "strength": row["strength"],
                "updated_at": row["updated_at"],
                "properties": json.loads(row["properties"]) if row["properties"] else {},
            }


def export_jsonl(store: MemoryStore, out: TextIO, *, stamps: bool = True) -> tuple[int, int]:
    """Write the whole store as JSONL; returns (memories, edges) written."""
    memories = edges = 0
    with store.lock:  # the store serializes users of its one connection
        for item in iter_export(store, stamps=stamps):
            out.write(dump_line(item) + "\n")
            if item["kind"] == "memory":
                memories += 1
            elif item["kind"] == "edge":
                edges += 1
    return memories, edges


def export_file(store: MemoryStore, target: str | os.PathLike[str], *, overwrite: bool = False,
                stamps: bool = True) -> tuple[int, int]:
    """Export to the file ``target``; returns (memories, edges) written.

    The file is written beside ``target`` (0600, in 0700 directories when it
    has to make them), synced and renamed over it, so an interrupted export
    leaves the old file and a reported one is on the disk. ``target`` may not
    be the database itself or a database's -wal/-shm/-journal file, nor an existing
    file that is not an earlier export (an empty one aside) unless ``overwrite``.
    """
    path = Path(target).expanduser()
    refuse_database_file(path, None if store.path == MEMORY_PATH else store.path, role="the export")
    if path.is_dir():
        raise ValidationError(f"the export cannot be {target}: that is a directory; give a file name")
    refuse_special_output(path, role="the export", hint=" ('-' writes to standard output)")
    if not overwrite and path.is_file() and not _earlier_export(path):
        raise ValidationError(f"{target} already exists and is not a localmem export (use --force to "
                              "overwrite it)")
    if not store.read_only and store.path != MEMORY_PATH:
        with store.lock:  # listed by forget: it holds the text (recorded first: so is what a killed one left)
            record_copy(store.conn, "export", str(path))
    with replacing_file(path) as stream:
        counts = export_jsonl(store, stream, stamps=stamps)
    return counts



def _earlier_export(path: Path, most: int = 1 << 20) -> bool:
    """Whether ``path`` is empty or opens with an export's line (its header, or a memory or edge
    line of an export without one), read from its first ``most`` bytes only."""
    if path.stat().st_size == 0:
        return True
    with open(path, "rb") as stream:
        first = stream.readline(most)
    try:
        line = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(line, dict) and (line.get("format") == "localmem-export"
                                       or line.get("kind") in ("memory", "edge"))
