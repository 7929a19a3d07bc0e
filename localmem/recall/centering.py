"""Centred cosines: the vector component measured from the store's mean direction.

Sentence embeddings of one store share a common direction (its register,
its chit-chat, its speakers), so every memory's cosine to a query carries
that shared part, and the spread between memories is narrow. Removing the
mean direction of the store's embeddings from the query and the memory
before the cosine leaves what tells them apart (the mean-centring of
"all-but-the-top"). The mean is the one the vector codes are
calibrated with (a sample of up to 8,192 stored embeddings, measured again
each time the store doubles); only the score changes, candidates are found
as before.

With unit vectors q and d and the mean m (not unit):

    cos(q - m, d - m) = (q·d - q·m - d·m + m·m) / (|q - m| |d - m|)
    |x - m| = sqrt(1 - 2 x·m + m·m)

so a candidate needs only its cosine to m (one SQL expression) beside the
cosine to the query it already has.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..storage.backend import Backend

MIN_ROWS = 32  # below this the mean is mostly the memories themselves


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


class Centre:
    """The store's mean vector (float64), with its float32 bytes and norm."""

    def __init__(self, vector: np.ndarray) -> None:
        self.vector = vector
        self.blob = vector.astype(np.float32).tobytes()
        self.norm = float(np.linalg.norm(vector))
        self.norm_sq = self.norm ** 2


def store_centre(backend: "Backend") -> Centre | None:
    """The store's mean vector: the middle threshold of the vector codes' calibration,
    measured from a sample of the store's own embeddings (storage/code_calibration.py)
    and kept current as the store grows. None before the first measured calibration."""
    row = backend.conn.execute(backend.sql["vector_calibration_centre"]).fetchone()
    dims = backend.dimensions or 0
    if row is None or row[1] is None or dims <= 0 or row[2] < MIN_ROWS:
        return None
    vector = np.frombuffer(row[0], dtype=np.float32)[:dims].astype(np.float64)
    return Centre(vector) if np.all(np.isfinite(vector)) else None


def usable_centre(backend: "Backend") -> Centre | None:
    """The store's mean vector when centred cosines can be measured from it, else None."""
    centre = store_centre(backend)
    return centre if centre is not None and centre.norm > 0 else None


def centred_similarities(backend: "Backend", results: list[dict[str, Any]],
                         query_vector: bytes, centre: Centre | None = None) -> dict[str, float]:
    """Centred cosine by memory id for the results that have a cosine to the query.

    ``centre``: the store's usable_centre, when the caller has it already. A result
    that carries ``_centre_cosine`` (its cosine to that centre, read by the channel
    that found it) needs no statement of its own.
    """
    scored = [r for r in results if r.get("_similarity") is not None]
    if not scored or not backend.dimensions:
        return {}
    if centre is None:
        centre = usable_centre(backend)
    if centre is None:
        return {}
    query = np.frombuffer(query_vector, dtype=np.float32).astype(np.float64)
    query_norm = float(np.linalg.norm(query))
    if not math.isfinite(query_norm) or query_norm <= 0:
        return {}
    query_centre = float(query @ centre.vector) / query_norm
    to_centre: dict[str, float] = {}
    asked: list[str] = []
    for result in scored:
        if "_centre_cosine" in result:
            to_centre[result["id"]] = result["_centre_cosine"]
        else:
            asked.append(result["id"])
    if asked:
        rows = backend.conn.execute(backend.sql["recall_centre_cosines"], {
            "ids": json.dumps(asked), "centre": centre.blob})
        to_centre.update(rows)
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
