"""Token codes in an export (format version 2), and whether an import can keep them.

A memory's token codes (storage/token_codes.py) are the sign bits of its token
vectors measured from the file's token centre, so they mean something only
beside that centre. Version 2 of the export carries both: the header's
``token_centre`` (base64 float32, for the header's embedder) and each memory
line's ``token_codes`` (``{"tokens": n, "codes": base64}`` or null). Import
keeps a line's codes when it keeps the line's vector and the database's centre
for that embedder is the file's (a database with none yet adopts the file's:
the centre is measured on a fixed sample, so it is the same for every store of
one model). Otherwise the memory is counted in ``without_token_codes`` and
``localmem reembed`` derives them again. Version 1 files carry no codes.
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..errors import ValidationError
from ..storage.token_centre import recorded_centre
from ..storage.token_codes import MAX_TOKENS
from ..timeparse import format_timestamp

if TYPE_CHECKING:
    from ..store import MemoryStore


def file_centre(store: MemoryStore, embedder: str | None) -> str | None:
    """The database's token centre for ``embedder``, base64, for the header (None: none)."""
    if embedder is None or not store.dimensions:
        return None
    centre = recorded_centre(store.conn, store.sql, embedder, store.dimensions)
    return None if centre is None else base64.b64encode(centre.tobytes()).decode("ascii")


def codes_field(tokens: int | None, codes: bytes | None) -> dict[str, Any] | None:
    """A memory line's ``token_codes``."""
    if not tokens or codes is None:
        return None
    return {"tokens": int(tokens), "codes": base64.b64encode(bytes(codes)).decode("ascii")}


def read_codes_field(value: Any, dims: int | None) -> tuple[int, bytes] | None:
    """A line's ``token_codes`` as (tokens, codes), checked against ``dims``; ValidationError
    naming the field when it is malformed."""
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) != {"tokens", "codes"}:
        raise ValidationError("'token_codes' must be null or {\"tokens\": N, \"codes\": BASE64}")
    tokens = value["tokens"]
    if not isinstance(tokens, int) or isinstance(tokens, bool) or not 1 <= tokens <= MAX_TOKENS:
        raise ValidationError(f"'token_codes.tokens' must be an integer from 1 to {MAX_TOKENS}")
    try:
        codes = base64.b64decode(str(value["codes"]), validate=True)
    except (binascii.Error, ValueError):
        raise ValidationError("'token_codes.codes' must be base64") from None
    if dims and len(codes) != tokens * ((dims + 7) // 8):
        raise ValidationError(f"'token_codes.codes' holds {len(codes)} bytes; {tokens} tokens of "
                              f"{dims} dimensions take {tokens * ((dims + 7) // 8)}")
    return tokens, codes


class CodesPolicy:
    """Whether this import keeps the file's token codes, decided from its header."""

    def __init__(self, store: MemoryStore, header: dict[str, Any], *, reembed: bool) -> None:
        self.store = store
        self.embedder = header.get("embedder")
        self.centre = header.get("token_centre")
        self.why_not = self._check(reembed)

    def _check(self, reembed: bool) -> str | None:
        store = self.store
        if reembed:
            return "the file's vectors are not used (--reembed)"
        if not self.centre or not self.embedder:
            return "the file carries no token codes"
        if not store.backend.token_evidence or store.embedder is None:
            return "this database keeps no token codes"
        try:
            centre = base64.b64decode(str(self.centre), validate=True)
        except (binascii.Error, ValueError):
            raise ValidationError("header field 'token_centre' must be base64") from None
        if len(centre) != 4 * (store.dimensions or 0):
            raise ValidationError("header field 'token_centre' does not match 'dimensions'")
        self.centre_bytes = centre
        with store.lock:
            ours = recorded_centre(store.conn, store.sql, store.embedder.name, store.dimensions or 0)
        if ours is not None and ours.tobytes() != centre:
            return "this database measures token codes from another centre"
        return None

    @property
    def keeps(self) -> bool:
        return self.why_not is None

    def adopt_centre(self, now: datetime) -> None:
        """Record the file's centre when the database has none (inside the caller's transaction)."""
        store = self.store
        if self.keeps and store.embedder is not None:
            store.conn.execute(store.sql["token_centre_set"], {
                "embedder": store.embedder.name, "dims": store.dimensions,
                "centre": self.centre_bytes, "measured_at": format_timestamp(now)})
