"""Warm-up: what the first recall of a process would load, loaded ahead.

A server (``localmem serve``, the MCP server) runs this in a background thread
as it starts (``MemoryStore.warm_up``), so its first answer costs what its
hundredth does: the learned-rank model is read, a query is encoded once
(which opens the embedder's query graph, or its plain session when the
learned model does not rank), and the in-memory vector codes catch up with
the file.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, Callable

from .learned_rank import TreeModel, usable_model

if TYPE_CHECKING:
    from ..storage.backend import Backend

# What the warm-up encodes: any short text opens the same sessions.
WARM_UP_TEXT = "warm up"


def read_learned_model(path: str | None) -> TreeModel | None:
    """The learned-rank model in ``path``, or the packaged one; None (said on stderr, and by
    recall) when it cannot be read."""
    try:
        return TreeModel.from_file(path) if path else TreeModel.packaged()
    except (OSError, ValueError, RecursionError) as exc:  # from_dict turns bad structure into ValueError
        where = f" ({path})" if path else ""
        print(f"localmem: learned ranking unavailable{where}: {exc}", file=sys.stderr)
        return None


def warm_up(backend: "Backend", learned: Callable[[], TreeModel | None]) -> dict[str, float]:
    """Load ahead what recall needs; seconds per part (a part not needed or not
    possible here is left out: recall says why when it runs)."""
    seconds: dict[str, float] = {}
    started = time.perf_counter()

    def lap(part: str) -> None:
        nonlocal started
        now = time.perf_counter()
        seconds[part] = round(now - started, 4)
        started = now

    _why, model = usable_model(backend, learned)
    lap("learned_model")
    if backend.embedder is not None and backend.has_vector_index:
        encoding = backend.embed_query(WARM_UP_TEXT, model.query_delta if model is not None else None)
        lap("query_encoding")
        if encoding is not None:
            backend.code_index.refresh(backend.conn, backend.sql)
            lap("vector_codes")
    return seconds


def load_embedder(embedder: Any) -> dict[str, float]:
    """Open the session writes embed with (already open unless a query graph served the
    warm-up); seconds, or nothing for an embedder with no ``load``."""
    load = getattr(embedder, "load", None)
    if not callable(load):
        return {}
    started = time.perf_counter()
    load()
    return {"embedder": round(time.perf_counter() - started, 4)}
