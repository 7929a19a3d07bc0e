"""The store's health report: counts per table, whether the derived indexes agree,
the embedder and the file (``MemoryStore.health``, ``localmem stats``, ``GET /health``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .database import MEMORY_PATH
from .migrations import LATEST_VERSION
from .records import rows_as_dicts

if TYPE_CHECKING:
    from .backend import Backend


def health_report(backend: "Backend", path: str) -> dict[str, Any]:
    """The health counts and facts of one store, read in the caller's snapshot."""
    counts = next(rows_as_dicts(backend.conn.execute(backend.sql["health_counts"])))
    fts_rows = backend.conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0]
    vectors = (backend.conn.execute(backend.sql["vector_codes_count"]).fetchone()[0]
               if backend.has_vector_index else 0)
    tags_agree = counts["tagged_memories"] == counts["memories_with_tags"]
    indexes_agree = (fts_rows == counts["memories"]
                     and (not backend.has_vector_index or vectors == counts["embeddings"])
                     and tags_agree)
    vector_ok = backend.embedder is not None and backend.has_vector_index and backend.embedder_error is None
    size = 0
    if path != MEMORY_PATH:
        size = sum(os.path.getsize(p) for p in (path, path + "-wal")
                   if os.path.exists(p))
    return {
        "status": "healthy" if indexes_agree else "degraded",
        "memory_count": counts["memories"],
        "vector_count": vectors,
        "embedding_count": counts["embeddings"],
        "fts_count": fts_rows,
        "edge_count": counts["edges"],
        "tag_count": counts["tags"],
        "memories_without_embedding": counts["memories_without_embedding"],
        # Memories with token codes (late-interaction evidence); the others until `localmem reembed`.
        "token_coded_count": counts["token_coded"],
        "token_evidence": backend.token_evidence,
        "indexes_agree": indexes_agree,
        "embedder": {
            "name": backend.embedder.name if backend.embedder else "none",
            "dimensions": backend.dimensions,
            "recorded": backend.meta("embedder"),
            "available": vector_ok,
            "error": backend.embedder_error,
            # LOCALMEM_QUERY_INT8=1: queries through the int8 query graph (embedders/query_int8.py)
            "query_int8": bool(getattr(backend.embedder, "query_int8", False)),
        },
        "schema_version": int(backend.meta("schema_version") or 0),
        "latest_schema_version": LATEST_VERSION,
        "path": path,
        "file_size_bytes": size,
    }
