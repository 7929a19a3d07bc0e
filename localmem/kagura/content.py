"""``full`` (content for the top rows, cut at 1,500 characters) and ``spans``
(where the query's terms occur in a memory's content).

Spans use the full-text index's own tokenizer (porter stemming over
unicode61, diacritics removed) on both the query (less function words) and
the content: the query ``errors`` marks ``error`` and ``Errors``, ``cafe``
marks ``Café``. Offsets are
character offsets into the whole content (``[start, end)``), also for rows
whose ``content`` is cut or absent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import apsw

from ..recall.keywords import FUNCTION_WORDS
from ..storage.backend import fts_tokenizer
from ..text import SEARCH_STOPWORDS

if TYPE_CHECKING:
    from ..storage.backend import Backend

CONTENT_LIMIT = 1500
MAX_SPANS = 50


def content_fields(content: str, carry: bool) -> dict[str, Any]:
    if not carry:
        return {"content": None, "content_truncated": None, "content_next_offset": None}
    if len(content) > CONTENT_LIMIT:
        return {"content": content[:CONTENT_LIMIT], "content_truncated": True,
                "content_next_offset": CONTENT_LIMIT}
    return {"content": content, "content_truncated": False, "content_next_offset": None}


class SpanFinder:
    """Matches of one query's terms in contents."""

    def __init__(self, backend: "Backend", query: str) -> None:
        self._tokenize = fts_tokenizer(backend.conn)
        encoded = query.encode("utf-8")
        words = [(stem, encoded[start:end].decode("utf-8", "ignore").lower())
                 for start, end, stem in self._tokenize(encoded, apsw.FTS5_TOKENIZE_QUERY, None,
                                                        include_offsets=True,
                                                        include_colocated=False)]
        # The query's words less function words (all of them if that leaves none).
        kept = [(stem, word) for stem, word in words
                if word not in FUNCTION_WORDS and word not in SEARCH_STOPWORDS] or words
        self.stems: dict[str, str] = {}
        for stem, word in kept:
            self.stems.setdefault(stem, word)

    def spans(self, content: str) -> list[dict[str, Any]]:
        if not self.stems or not content:
            return []
        encoded = content.encode("utf-8")
        tokens = self._tokenize(encoded, apsw.FTS5_TOKENIZE_DOCUMENT, None,
                                include_offsets=True, include_colocated=False)
        ascii_only = len(encoded) == len(content)
        out: list[dict[str, Any]] = []
        for start, end, token in tokens:
            term = self.stems.get(token)
            if term is None:
                continue
            if not ascii_only:
                start = len(encoded[:start].decode("utf-8", "ignore"))
                end = len(encoded[:end].decode("utf-8", "ignore"))
            out.append({"start": start, "end": end, "term": term})
            if len(out) >= MAX_SPANS:
                break
        return out
