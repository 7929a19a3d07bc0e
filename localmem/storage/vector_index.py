"""The vector index on disk: a 3-bit code per embedding in ``vector_codes``.

Writes stay in SQL (vector_codes.sql encodes with sqlite-vec's functions and
the store's calibration); each process scans the codes in memory
(code_search.py), and exact cosines come from the float32 copy in
``memory_embeddings``. The calibration (code_calibration.py) starts at fixed
thresholds and is measured again from the store's own vectors each time the
store has doubled since the last check; when the thresholds have moved, every
code is re-encoded and the generation goes up, so other processes reload.
"""

from __future__ import annotations

import json
import random
from array import array
from datetime import datetime, timezone
from typing import Any

import apsw
import numpy as np

from . import code_calibration as calibration, staged_rows
from .statements import Statements

FIRST_CHECK_ROWS = 32  # the first calibration from data (and the first store mean, recall/centering.py)


def code_input(vector: bytes) -> bytes:
    """A float32 vector padded with zeros to a multiple of 8 dimensions, for vector_codes.sql."""
    dims = len(vector) // 4
    return vector + bytes(4 * (calibration.padded_dimensions(dims) - dims))


def knn_parameters(query_vector: bytes, code_hits: list[int], k: int) -> dict[str, Any]:
    """Bindings of vector_knn.sql: the exact :k nearest of the candidates the code scan chose."""
    return {"query_vector": query_vector, "code_hits": json.dumps(code_hits), "k": max(1, k)}


def _set_calibration(conn: apsw.Connection, sql: Statements, *, generation: int, dims: int,
                     thresholds: calibration.Thresholds, depths: calibration.Depths | None,
                     checked_rows: int) -> None:
    conn.execute(sql["vector_calibration_set"], {
        "generation": generation, "dims": dims, **thresholds.blobs(),
        "depth_1bit": depths.one_bit if depths else 1.0,
        "depth_3bit": depths.three_bit if depths else 1.0,
        "sample_recall": depths.sample_recall if depths else None,
        "sample_rows": depths.sample_rows if depths else 0,
        "checked_rows": checked_rows,
        "calibrated_at": datetime.now(timezone.utc).isoformat(timespec="seconds") if depths else None,
    })


def create(conn: apsw.Connection, sql: Statements, dims: int, *, generation: int = 1) -> None:
    """Give a store whose dimension just became known its starting calibration."""
    if conn.execute(sql["vector_calibration_get"]).fetchone() is None:
        _set_calibration(conn, sql, generation=generation, dims=dims,
                         thresholds=calibration.default_thresholds(dims), depths=None, checked_rows=0)


def insert(conn: apsw.Connection, sql: Statements, pk: int, vector: bytes) -> None:
    conn.execute(sql["vector_codes_insert"], {"pk": pk, "code_input": code_input(vector)})


def insert_many(conn: apsw.Connection, sql: Statements, pairs: list[tuple[int, bytes]]) -> None:
    """Write the codes of a batch of new (pk, vector) pairs, in their order (staged_rows.py)."""
    staged_rows.write_rows(
        conn, sql, ({"pk": pk, "code_input": code_input(vector)} for pk, vector in pairs),
        direct=sql["vector_codes_insert"], name="vector_codes",
        staged=sql.compose("vector_codes_insert_staged", code_input="s.code_input"))


def set_time(conn: apsw.Connection, sql: Statements, pk: int) -> None:
    """Copy a changed timestamp into the index (the memory row is already updated)."""
    conn.execute(sql["vector_codes_set_time"], {"pk": pk})


def delete(conn: apsw.Connection, sql: Statements, pk: int) -> None:
    conn.execute(sql["vector_codes_delete"], {"pk": pk})


def _sample(conn: apsw.Connection, sql: Statements, dims: int) -> np.ndarray:
    """Up to SAMPLE_ROWS stored embeddings, picked at random by key."""
    top = conn.execute(sql["memory_max_pk"]).fetchone()[0] or 0
    rows = conn.execute(sql["embedding_count"]).fetchone()[0]
    if top <= 2 * calibration.SAMPLE_ROWS:
        pks = list(range(1, top + 1))
    else:
        pks = random.Random(rows).sample(range(1, top + 1), 2 * calibration.SAMPLE_ROWS)
    vectors = [blob for _pk, blob in conn.execute(sql["embeddings_sample"], {"pks": json.dumps(pks)})
               if len(blob) == 4 * dims]
    sample = np.frombuffer(b"".join(vectors[: calibration.SAMPLE_ROWS]), dtype=np.float32)
    return sample.reshape(-1, dims)


def _calibration_row(conn: apsw.Connection, sql: Statements, dims: int) -> Any:
    row = conn.execute(sql["vector_calibration_get"]).fetchone()
    if row is None:
        create(conn, sql, dims)
        row = conn.execute(sql["vector_calibration_get"]).fetchone()
    return row


def _recode_all(conn: apsw.Connection, sql: Statements, dims: int) -> None:
    rows = [(pk, blob) for pk, blob in conn.execute(sql["embeddings_all"]) if len(blob) == 4 * dims]
    staged_rows.write_rows(
        conn, sql, ({"pk": pk, "code_input": code_input(blob)} for pk, blob in rows),
        direct=sql["vector_codes_recode"], name="vector_codes", stage="vector_codes_stage_existing",
        staged=sql.compose("vector_codes_recode_staged", code_input="s.code_input"))


def recalibrate(conn: apsw.Connection, sql: Statements, dims: int, *, recode: bool = True,
                force: bool = False) -> bool:
    """Measure the calibration from the store's vectors; re-encode if the thresholds moved.

    Returns whether the thresholds changed. ``force`` adopts the measured
    thresholds however little they moved; ``recode=False`` leaves the codes
    alone (for a caller about to write every code itself).
    """
    row = _calibration_row(conn, sql, dims)
    generation, old = row[0], calibration.Thresholds.from_blobs(row[2], row[3], row[4])
    rows = conn.execute(sql["vector_clock_get"]).fetchone()[1]
    sample = _sample(conn, sql, dims)
    sample = sample[np.all(np.isfinite(sample), axis=1)]
    if len(sample) == 0:
        return False
    new = calibration.measured_thresholds(sample)
    never_measured = row[10] is None
    moved = force or never_measured or calibration.drift(old, new) > calibration.DRIFT_LIMIT
    thresholds = new if moved else old
    depths = calibration.measure_depths(sample, thresholds, np.random.default_rng(rows))
    _set_calibration(conn, sql, generation=generation + 1 if moved else generation, dims=dims,
                     thresholds=thresholds, depths=depths, checked_rows=rows)
    if moved and recode:
        _recode_all(conn, sql, dims)
    return moved


def check_calibration(conn: apsw.Connection, sql: Statements, dims: int) -> None:
    """After writes: recalibrate once the store has doubled since the last check."""
    row = conn.execute(sql["vector_calibration_get"]).fetchone()
    rows = conn.execute(sql["vector_clock_get"]).fetchone()[1]
    if row is not None and rows >= max(FIRST_CHECK_ROWS, 2 * row[9]):
        recalibrate(conn, sql, dims)


def rebuild(conn: apsw.Connection, sql: Statements, dims: int) -> int:
    """Empty and refill the index from memory_embeddings, calibrated afresh; returns the rows written."""
    old = conn.execute(sql["vector_calibration_get"]).fetchone()
    for _ in conn.execute(sql["vector_codes_clear"]):
        pass
    create(conn, sql, dims, generation=old[0] + 1 if old else 1)
    stored = conn.execute(sql["embedding_count"]).fetchone()[0]
    if stored >= FIRST_CHECK_ROWS:  # thresholds from the data before any code is written
        recalibrate(conn, sql, dims, recode=False, force=True)
    pairs = [(pk, v) for pk, v in conn.execute(sql["embeddings_all"]) if len(v) == 4 * dims]
    insert_many(conn, sql, pairs)
    count = len(pairs)
    row = conn.execute(sql["vector_calibration_get"]).fetchone()
    conn.execute(sql["vector_calibration_checked"], {"checked_rows": count if row[10] else 0})
    return count


def doctor_bindings(dims: int) -> dict[str, bytes]:
    """Bindings for statements that encode a stored embedding in SQL (no padding needed)."""
    return {"code_input": array("f", [0.0] * dims).tobytes()}
