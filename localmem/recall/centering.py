"""Centred cosines: the vector component measured from the store's mean direction.

Sentence embeddings of one store share a common direction (its register,
its chit-chat, its speakers), so every memory's cosine to a query carries
that shared part, and the spread between memories is narrow. Removing the
mean direction of the store's embeddings from the query and the memory
before the cosine leaves what tells them apart (the mean-centring of
"all-but-the-top"). The mean comes from a random sample of stored
embeddings, computed again when the store has grown (its largest key) by a
REFRESH_SHARE; only the score changes, candidates are found as before.

With unit vectors q and d and the mean m (not unit):

    cos(q - m, d - m) = (q·d - q·m - d·m + m·m) / (|q - m| |d - m|)
    |x - m| = sqrt(1 - 2 x·m + m·m)

so a candidate needs only its cosine to m (one SQL expression) beside the
cosine to the query it already has.
"""

from __future__ import annotations

import json
import math
import random
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..storage.backend import Backend

SAMPLE_ROWS = 512
MIN_ROWS = 32  # below this the mean is mostly the memories themselves
REFRESH_SHARE = 0.1


def mean_direction(vectors: list[bytes], dimensions: int) -> np.ndarray | None:
    """The mean of the unit-normalised float32 vectors of the right length; None when too few."""
    usable = [v for v in vectors if len(v) == 4 * dimensions][:SAMPLE_ROWS]
    if dimensions <= 0 or len(usable) < MIN_ROWS:
        return None
    matrix = np.frombuffer(b"".join(usable), dtype=np.float32).reshape(-1, dimensions).astype(np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    keep = np.isfinite(norms) & (norms > 0)
    if keep.sum() < MIN_ROWS:
        return None
    return (matrix[keep] / norms[keep, None]).mean(axis=0)


def centred_cosine(query_doc: float, query_centre: float, doc_centre: float,
                   centre_sq: float) -> float | None:
    """cos(q - m, d - m) from q·d, q·m, d·m and m·m (q, d unit vectors); None when undefined."""
    q_norm_sq = 1.0 - 2.0 * query_centre + centre_sq
    d_norm_sq = 1.0 - 2.0 * doc_centre + centre_sq
    if q_norm_sq <= 1e-12 or d_norm_sq <= 1e-12:
        return None
    value = (query_doc - query_centre - doc_centre + centre_sq) / math.sqrt(q_norm_sq * d_norm_sq)
    if not math.isfinite(value):
        return None
    return max(-1.0, min(1.0, value))


class _Centre:
    def __init__(self, vector: np.ndarray | None, rows: int, model: str | None) -> None:
        self.vector = vector
        self.rows = rows
        self.model = model
        self.blob = None if vector is None else vector.astype(np.float32).tobytes()
        self.norm = 0.0 if vector is None else float(np.linalg.norm(vector))
        self.norm_sq = self.norm ** 2


_CENTRES: "weakref.WeakKeyDictionary[Any, _Centre]" = weakref.WeakKeyDictionary()


def store_centre(backend: "Backend") -> _Centre:
    """The store's mean direction, from a sample; cached until the store changes size by
    REFRESH_SHARE or its embedder changes."""
    conn, sql = backend.conn, backend.sql
    # The largest key, not a count: an index lookup on every recall, where a
    # count would scan the table; it tracks growth, which is what moves the mean.
    rows = conn.execute(sql["memory_max_pk"]).fetchone()[0] or 0
    model = getattr(backend.embedder, "name", None)
    cached = _CENTRES.get(backend)
    if cached is not None and cached.model == model and abs(rows - cached.rows) <= REFRESH_SHARE * max(cached.rows, MIN_ROWS):
        return cached
    top = rows
    if top <= 2 * SAMPLE_ROWS:
        pks = list(range(1, top + 1))
    else:
        pks = random.Random(rows).sample(range(1, top + 1), 2 * SAMPLE_ROWS)
    blobs = [blob for _pk, blob in conn.execute(sql["embeddings_sample"], {"pks": json.dumps(pks)})]
    centre = _Centre(mean_direction(blobs, backend.dimensions or 0), rows, model)
    _CENTRES[backend] = centre
    return centre


def centred_similarities(backend: "Backend", results: list[dict[str, Any]],
                         query_vector: bytes) -> dict[str, float]:
    """Centred cosine by memory id for the results that have a cosine to the query."""
    scored = [r for r in results if r.get("_similarity") is not None]
    if not scored or not backend.dimensions:
        return {}
    centre = store_centre(backend)
    if centre.vector is None or centre.norm <= 0:
        return {}
    query = np.frombuffer(query_vector, dtype=np.float32).astype(np.float64)
    query_norm = float(np.linalg.norm(query))
    if not math.isfinite(query_norm) or query_norm <= 0:
        return {}
    query_centre = float(query @ centre.vector) / query_norm
    rows = backend.conn.execute(backend.sql["recall_centre_cosines"], {
        "ids": json.dumps([r["id"] for r in scored]), "centre": centre.blob})
    to_centre = {memory_id: cosine for memory_id, cosine in rows}
    out: dict[str, float] = {}
    for result in scored:
        cosine = to_centre.get(result["id"])
        if cosine is None or not math.isfinite(cosine):
            continue
        value = centred_cosine(float(result["_similarity"]), query_centre, cosine * centre.norm,
                               centre.norm_sq)
        if value is not None:
            out[result["id"]] = value
    return out
