"""The first line of an export: what the file holds and which embedder made its vectors.

    {"kind": "header", "format": "localmem-export", "version": 2,
     "localmem": "0.1.0", "embedder": "all-MiniLM-L6-v2", "dimensions": 384,
     "memories": 120, "edges": 14, "token_centre": "...base64..."}

Version 2 adds ``token_centre`` and each memory line's ``token_codes``
(export_tokens.py); version 1 files (without them) import as before.

Import reads it to refuse vectors from another embedder (they would sit in
this database's vector space and match nothing, or the wrong things) unless
asked to re-embed, and to notice a file that ends early. It carries no time
stamp, so exporting the same store twice gives the same bytes. Files without
a header (older exports, hand-written data) still import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import __version__
from ..errors import ValidationError
from .export_tokens import file_centre

if TYPE_CHECKING:
    from ..store import MemoryStore

FORMAT = "localmem-export"
VERSION = 2
HEADER_FIELDS = frozenset({"format", "version", "localmem", "embedder", "dimensions", "memories", "edges",
                           "token_centre"})


def make_header(store: MemoryStore, memories: int, edges: int, embeddings: int) -> dict[str, Any]:
    """The header for an export from ``store``; ``embedder`` is None when the file carries no vector."""
    embedder = store.backend.meta("embedder") if embeddings else None
    return {"kind": "header", "format": FORMAT, "version": VERSION, "localmem": __version__,
            "embedder": embedder, "dimensions": store.dimensions if embedder else None,
            "memories": memories, "edges": edges, "token_centre": file_centre(store, embedder)}


def _same_model(a: str, b: str) -> bool:
    def canonical(name: str) -> str:
        name = name.strip().lower()
        return name.removeprefix("sentence-transformers/")
    return canonical(a) == canonical(b)


def check_header(header: dict[str, Any], store: MemoryStore, *, reembed: bool) -> dict[str, int]:
    """Validate a header line against ``store``; returns the counts it announces.

    Raises ``ValidationError`` when the format is unknown or newer, or when
    the file's vectors come from another embedder and ``reembed`` is off.
    """
    unknown = set(header) - HEADER_FIELDS
    if unknown:
        raise ValidationError(f"unknown header field(s): {', '.join(sorted(unknown))}")
    if header.get("format") != FORMAT:
        raise ValidationError(f"not a localmem export (format {header.get('format')!r}, expected {FORMAT!r})")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValidationError(f"bad export version {version!r}")
    if version > VERSION:
        raise ValidationError(f"the file is export version {version}, newer than this localmem reads "
                              f"({VERSION}); upgrade localmem to import it")
    counts = {}
    for name in ("memories", "edges"):
        value = header.get(name)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValidationError(f"header field '{name}' must be a non-negative integer")
        counts[name] = value
    embedder, dimensions = header.get("embedder"), header.get("dimensions")
    if embedder is None or reembed:
        return counts  # no vectors in the file, or they will not be used
    if not isinstance(embedder, str) or not isinstance(dimensions, int) or isinstance(dimensions, bool):
        raise ValidationError("header fields 'embedder' (a string) and 'dimensions' (an integer) "
                              "go together")
    ours = store.embedder.name if store.embedder is not None else None
    if ours is None or store.dimensions != dimensions or not _same_model(ours, embedder):
        here = f"{ours!r} ({store.dimensions} dimensions)" if ours else "no embedder"
        raise ValidationError(
            f"the file's vectors were made by {embedder!r} ({dimensions} dimensions) and this "
            f"database uses {here}: import with --reembed to embed every memory with this "
            f"database's embedder, or into a database opened with --embedder {embedder}")
    return counts
