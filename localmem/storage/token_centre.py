"""The centre a file's token codes are measured from: read it, or measure and record it.

The centre is the mean direction of an embedder's token vectors. It is
measured once, on a fixed sample of everyday text (below, so that every
store of one model gets the same centre whatever it holds first), and then
recorded in the file: each token code depends on it, so it never changes
while the codes exist. On the LoCoMo dev data a centre measured on other
text (the questions, or 50 turns of one conversation) ranked as well as one
measured on every stored turn.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Callable

import apsw
import numpy as np

from ..embedders.base import TokenEmbedder
from ..errors import StorageError
from ..timeparse import format_timestamp
from .database import transaction
from .statements import Statements
from .token_codes import measure_centre

SAMPLE_TEXTS = (
    "I moved the team meeting to Thursday afternoon because half of us are travelling.",
    "Remember that Sam is allergic to peanuts, so no satay at the party.",
    "The build failed again: the migration script expects Python 3.11 but CI runs 3.9.",
    "We decided to keep the old billing API until every customer has switched.",
    "My sister starts her new job at the hospital next month; she is nervous but excited.",
    "Bought a second-hand road bike and rode forty kilometres along the river on Sunday.",
    "The landlord says the heating will be fixed by Friday, but he said that last week too.",
    "Prefer short answers with code examples; skip the long explanations.",
    "Our flight to Lisbon leaves at 7:40, so we need a taxi at five in the morning.",
    "She painted a sunset over the lake and gave it to her grandmother for her birthday.",
    "The database backup runs every night at two and keeps thirty days of copies.",
    "He has been learning the guitar for a year and just played his first open-mic night.",
    "What did the doctor say about the knee? Rest for two weeks, then physiotherapy.",
    "Dinner with Priya and Tom was lovely; they are adopting a rescue dog called Biscuit.",
    "The quarterly report is due on the fifteenth and still needs the sales figures.",
    "I think the new library is too slow for large files, so we wrote our own parser.",
    "Yes! We finally finished the garden shed, and the kids already filled it with toys.",
    "Support asked whether the export can include deleted items; it cannot yet.",
    "Reading a book about the history of maps; the chapter on sea charts is fascinating.",
    "Call the bank about the card that was charged twice for the same order.",
)


def recorded_centre(conn: apsw.Connection, sql: Statements, embedder: str,
                    dims: int) -> np.ndarray | None:
    """The centre recorded for ``embedder``; None when there is none of this dimension."""
    row = conn.execute(sql["token_centre_get"], {"embedder": embedder}).fetchone()
    if row is None or int(row[0]) != dims or len(row[1]) != dims * 4:
        return None
    centre = np.frombuffer(row[1], dtype=np.float32).copy()
    return centre if np.all(np.isfinite(centre)) else None


def measure_and_record(conn: apsw.Connection, sql: Statements, embedder: str, dims: int,
                       embed_tokens: Callable[[list[str]], list[np.ndarray]],
                       now: datetime | None = None) -> np.ndarray | None:
    """Measure the centre on the sample and record it (another writer's record wins);
    None when the file cannot be written (its memories cannot be either)."""
    centre = measure_centre(embed_tokens(list(SAMPLE_TEXTS)), dims)
    when = format_timestamp(now or datetime.now(timezone.utc))
    try:
        with transaction(conn):
            conn.execute(sql["token_centre_set"], {"embedder": embedder, "dims": dims,
                                                   "centre": centre.tobytes(), "measured_at": when})
    except StorageError:
        return None
    return recorded_centre(conn, sql, embedder, dims)


def centre_for(conn: apsw.Connection, sql: Statements, embedder: TokenEmbedder, dims: int,
               now: datetime | None, *, record: bool) -> np.ndarray | None:
    """The centre recorded for ``embedder``; with ``record`` (a writer about to store
    codes), measured and recorded first when there is none. Raises
    ``EmbedderUnavailable`` when the embedder cannot run to measure it."""
    centre = recorded_centre(conn, sql, embedder.name, dims)
    if centre is None and record:
        centre = measure_and_record(conn, sql, embedder.name, dims,
                                    lambda texts: embedder.embed_with_tokens(texts)[1], now)
    return centre
