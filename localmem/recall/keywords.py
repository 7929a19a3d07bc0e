"""The keyword component: FTS5 BM25 over a memory's content and its thread
context, normalised by what an ideal match would score.

``keyword = min(1, bm25(memory) / Σ idf(term))``: a memory that contains
every query keyword once, at average length, scores 1; one that contains a
third of the (equally rare) keywords scores a third — AutoMem's "share of
query keywords in content", made aware of how rare each keyword is and of the
words of the memory's thread neighbours (weighted lower the further away
they are). A keyword no memory contains gets the mean weight of those that
occur: it cannot tell memories apart, but a match still lacks it.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any


from ..storage.backend import remembered
from ..text import extract_keywords, keyword_share, substring_match_score

if TYPE_CHECKING:
    from ..storage.backend import Backend

MAX_MATCH_TERMS = 32
# Function words dropped before BM25, on top of AutoMem's 26 stopwords: in a
# small store a question word like "did" is rare and would outweigh the
# words that carry the meaning.
FUNCTION_WORDS = frozenset("""
    a about above across after again against all almost along already also although always am
    among an and another any anybody anyone anything anyway anywhere are around as at be became
    because become been before being below between both but by can cannot could did do does
    doing done down during each either else ever every for from further get gets getting got
    had has have having he her here hers herself him himself his how however i if in into is it
    its itself just least less let like many may me might mine more most much must my myself
    neither never no nobody none nor not nothing now of off often on once one only onto or other
    others our ours ourselves out over own per perhaps please quite rather really said same
    say says she should since so some somebody someone something sometimes still such than that
    the their theirs them themselves then there these they thing things this those though
    through thus to too toward towards under until up upon us very via was we were what whatever
    when whenever where wherever whether which while who whoever whom whose why will with within
    without would yes yet you your yours yourself yourselves
""".split())
IDF_FLOOR = 1e-6  # FTS5's own floor for terms in more than half the rows
# The keyword score leaves out terms in more than this many memories (see
# KeywordScorer.searched), and keeps the rarest of all-common terms only up to
# FALLBACK_TERM_ROWS: ranking a term's hits reads every one of its postings.
COMMON_TERM_ROWS = 2000
FALLBACK_TERM_ROWS = 20_000
_FALLBACK_TOKEN = re.compile(r"\w+")


def query_terms(query: str) -> list[str]:
    """The query's keywords (AutoMem's extraction) less function words; else its plain words."""
    lowered = query.lower()
    keywords = extract_keywords(lowered)
    terms = [k for k in keywords if k not in FUNCTION_WORDS] or keywords or [
        t for t in _FALLBACK_TOKEN.findall(lowered) if t.strip("_")]
    return terms[:MAX_MATCH_TERMS]


def match_expression(terms: list[str]) -> str | None:
    """An FTS5 MATCH string OR-ing the terms, each quoted so no user text is syntax."""
    if not terms:
        return None
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def bm25_weights_sql(weights: tuple[float, ...]) -> str:
    return ", ".join(repr(float(w)) for w in weights)


def _count_rows(backend: "Backend", term: str) -> int:
    tokens = backend.query_tokens(term)
    if len(tokens) == 1:
        row = backend.conn.execute(backend.sql["fts_term_rows"], {"term": tokens[0]}).fetchone()
        return int(row[0]) if row else 0
    if not tokens:
        return 0
    row = backend.conn.execute(backend.sql["fts_phrase_rows"], {"match": match_expression([term])}).fetchone()
    return int(row[0])


def document_frequency(backend: "Backend", term: str, cache: dict[Any, Any] | None) -> int:
    """How many memories contain ``term`` (a query word: one stem, or a phrase of several),
    kept in ``cache`` (Backend.content_cache) for the store's generation: a common term's
    count reads its whole doclist, and queries repeat terms."""
    return remembered(cache, ("term_rows", term), lambda: _count_rows(backend, term))


class KeywordScorer:
    """Keyword scores of memories for one query (one object per query per recall)."""

    def __init__(self, backend: "Backend", query: str, *, with_vectors: bool = True) -> None:
        self.backend = backend
        self.query = query
        # Without a vector channel the keyword channel is the whole search: the
        # rarest of all-common terms is then kept however common it is.
        self.fallback_rows = FALLBACK_TERM_ROWS if with_vectors else None
        self.mode = backend.config.keyword_scoring
        self.terms = query_terms(query)
        self._df: tuple[int, list[int]] | None = None
        self._searched: list[tuple[str, int]] | None = None
        self._ideal: float | None = None
        self._known: dict[int, float | None] = {}  # bm25 by pk, learnt elsewhere (None: no match)

    def _frequencies(self) -> tuple[int, list[int]]:
        """(memories in the store, document frequency of each term), computed once.

        Kept for the store's generation (Backend.content_cache): a common
        term's count reads its whole doclist, and queries repeat terms.
        """
        if self._df is None:
            cache = self.backend.content_cache()
            total = remembered(cache, ("memory_count",), lambda: self.backend.conn.execute(
                self.backend.sql["memory_count"]).fetchone()[0])
            frequencies = [document_frequency(self.backend, term, cache) for term in self.terms]
            self._df = (total, frequencies)
        return self._df

    @property
    def searched(self) -> list[tuple[str, int]]:
        """The terms the score uses, with their document frequencies.

        Terms in more than COMMON_TERM_ROWS memories are left out: each costs
        a scan of all its postings (tens of thousands in a large store) and
        weighs little next to the rare terms. When every term is that common,
        the rarest is kept if it is in at most FALLBACK_TERM_ROWS memories (in
        any number when there is no vector search to fall back on).
        On stores of up to 100,000 memories this is the rule of 2% of the
        store that it replaced.
        """
        if self._searched is None:
            _total, frequencies = self._frequencies()
            pairs = list(zip(self.terms, frequencies))
            kept = [(t, n) for t, n in pairs if n <= COMMON_TERM_ROWS]
            if not any(n for _, n in kept):
                ceiling = self.fallback_rows
                present = sorted((n, t) for t, n in pairs if 0 < n and (ceiling is None or n <= ceiling))
                kept = [(present[0][1], present[0][0])] if present else []
            self._searched = kept
        return self._searched

    @property
    def left_out(self) -> list[str]:
        """The query's terms that occur in the store but are too common to be searched."""
        searched = {t for t, _ in self.searched}
        _total, frequencies = self._frequencies()
        return [t for t, n in zip(self.terms, frequencies) if n > 0 and t not in searched]

    @property
    def document_frequencies(self) -> list[int]:
        """How many memories in the store hold each of ``terms`` (0: none)."""
        return self._frequencies()[1]

    @property
    def total(self) -> int:
        """Memories in the store (as the document frequencies were counted)."""
        return self._frequencies()[0]

    @property
    def postings(self) -> int:
        """Postings of the searched terms together: what ranking their hits reads."""
        return sum(n for _, n in self.searched)

    @property
    def match(self) -> str | None:
        """MATCH string of the searched terms (for candidates and for scores alike)."""
        return match_expression([t for t, _ in self.searched])

    @property
    def ideal(self) -> float:
        """Σ idf over the searched terms: the BM25 score of a memory matching each once."""
        if self._ideal is None:
            total, _ = self._frequencies()
            weights = [max(IDF_FLOOR, math.log((total - n + 0.5) / (n + 0.5))) if n else None
                       for _, n in self.searched]
            known = [w for w in weights if w is not None]
            mean = sum(known) / len(known) if known else 1.0
            self._ideal = sum(w if w is not None else mean for w in weights)
        return self._ideal

    def note_scores(self, scores: dict[int, float | None]) -> None:
        """Raw bm25 of memories (by pk) for this query's searched terms, found by another statement."""
        self._known.update(scores)

    def scores(self, candidates: list[dict[str, Any]]) -> dict[str, float]:
        """Keyword score by memory id for the candidates (absent = 0)."""
        if not self.terms or not candidates or self.match is None:
            return {}
        if self.mode == "automem":
            return {c["id"]: (substring_match_score(self.query, c["memory"]["content"], c["memory"]["tags"])
                              if c["match_type"] == "keyword"
                              else keyword_share(self.terms, c["memory"]["content"]))
                    for c in candidates}
        ideal = self.ideal
        if ideal <= 0:
            return {}
        raw: dict[str, float] = {c["id"]: c["_bm25"] for c in candidates if c.get("_bm25") is not None}
        missing = {c["_pk"]: c["id"] for c in candidates if c["id"] not in raw and "_pk" in c}
        for pk in [pk for pk in missing if pk in self._known]:
            score = self._known[pk]
            if score is not None:
                raw[missing[pk]] = score
            del missing[pk]
        if missing:
            statement = self.backend.sql["recall_keyword_scores"].format(
                weights=bm25_weights_sql(self.backend.config.keyword_column_weights))
            for pk, score in self.backend.conn.execute(statement, {
                    "match": self.match, "pks": json.dumps(list(missing))}):
                raw[missing[pk]] = score
        return {memory_id: min(1.0, score / ideal) for memory_id, score in raw.items()}
