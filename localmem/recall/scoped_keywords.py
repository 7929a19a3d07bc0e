"""Keyword scores with the statistics of the recall scope.

FTS5's bm25() weighs each keyword by its rarity in the whole store. A recall
narrowed by tags or a time window searches a much smaller collection, where
that weight can be wrong both ways: a word rare in the store may be in half
the scope (a person's name in their own conversation), and BM25's idf floors
every word in more than half the rows to nothing. Here each keyword's share
of the BM25 score is re-weighted by its idf within the scope, in Lucene's
never-negative form ``log(1 + (N - n + 0.5) / (n + 0.5))``, and normalised
by the ideal match of the scope, as keywords.py does for the store.

The term-frequency part of each keyword (BM25's saturation and length
normalisation, thread context columns included) is FTS5's own: one bm25()
per keyword, divided by FTS5's idf of that keyword in the store. Only scopes
of at most MAX_SCOPE_ROWS memories get their own statistics (see there).
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Mapping

from ..storage.backend import remembered
from .keyword_tables import scope_term_scores, term_tables
from .keywords import IDF_FLOOR, KeywordScorer, bm25_weights_sql, match_expression
from .scope import FTS_SCOPE_KEY

if TYPE_CHECKING:
    from ..storage.backend import Backend
    from .channels import Scope


# Scope statistics are counted only for scopes of at most this many memories:
# counting a keyword's rows in a broad scope costs a scan of its postings, and
# a broad scope's statistics are closer to the store's anyway.
MAX_SCOPE_ROWS = 4000
# (keyword, memory) bm25 values kept until the file changes, at most (then started over).
MAX_KEPT_TERM_SCORES = 100_000


def small_scope(backend: "Backend", scope: "Scope") -> bool:
    """Whether the narrowed scope admits at most MAX_SCOPE_ROWS memories (index-only, capped counts)."""
    bounds = scope.size_bounds(backend, MAX_SCOPE_ROWS + 1)
    known = [b for b in bounds if b is not None]
    return bool(known) and min(known) <= MAX_SCOPE_ROWS


def scoped_statistics(backend: "Backend", scope: "Scope") -> bool:
    """Whether keyword scores use the statistics of ``scope`` (its own idf): the lever is on,
    with BM25, and the scope is narrowed and small."""
    config = backend.config
    return (config.keyword_scope_idf and config.keyword_scoring == "bm25" and scope.narrowed
            and small_scope(backend, scope))


def read_ahead(backend: "Backend", scope: "Scope", query: str) -> None:
    """Read what the keyword scores of ``query`` in ``scope`` will read, into the store's
    content cache: the scope's and each keyword's counts and the keywords' tables (recall
    does it while the model encodes the query on another thread). The scores read the
    same (with the query's vector, which a query the model encodes has), so the answer
    is the same and the work is done earlier, not twice."""
    if not query or backend.content_cache() is None or not scoped_statistics(backend, scope):
        return
    scorer = KeywordScorer(backend, query)  # as recall's own when the query has a vector
    if scorer.match is None or not scorer.searched:
        return
    ScopedKeywords(backend, scope, scorer).weights()
    term_tables(backend, scope, scorer, bm25_weights_sql(backend.config.keyword_column_weights))


def store_idf(rows: int, hits: int) -> float:
    """FTS5's idf of a keyword in ``hits`` of ``rows`` memories (floored, as bm25() does)."""
    return max(IDF_FLOOR, math.log((rows - hits + 0.5) / (hits + 0.5)))


def scope_idf(rows: int, hits: int) -> float:
    """A keyword's idf within a scope of ``rows`` memories, ``hits`` of them matching.

    Never negative and never zero for a word some memory lacks, so words common
    in a small scope still order its memories a little.
    """
    return math.log(1.0 + (rows - hits + 0.5) / (hits + 0.5))


def scope_ideal(weights: Mapping[str, float | None]) -> float:
    """Σ idf over the keywords; one no memory in scope contains counts the mean of the others."""
    known = [w for w in weights.values() if w is not None]
    mean = sum(known) / len(known) if known else 1.0
    return sum(w if w is not None else mean for w in weights.values())


def reweighted_scores(per_term: Mapping[str, Mapping[str, float]], store: Mapping[str, float],
                      scope: Mapping[str, float | None], ideal: float) -> dict[str, float]:
    """Keyword score by memory id: Σ_t scope_idf(t) × bm25_t / store_idf(t), over ``ideal``, capped at 1.

    ``per_term[t]`` maps memory ids to FTS5's bm25() for keyword t alone.
    """
    if ideal <= 0:
        return {}
    raw: dict[str, float] = {}
    for term, scores in per_term.items():
        weight = scope.get(term)
        if not weight or store.get(term, 0.0) <= 0:
            continue
        factor = weight / store[term]
        for memory_id, score in scores.items():
            raw[memory_id] = raw.get(memory_id, 0.0) + score * factor
    return {memory_id: min(1.0, max(0.0, score / ideal)) for memory_id, score in raw.items()}


class ScopedKeywords:
    """Keyword scores within one narrowed scope, for one query (statistics fetched once)."""

    def __init__(self, backend: "Backend", scope: "Scope", scorer: KeywordScorer) -> None:
        self.backend = backend
        self.scope = scope
        self.scorer = scorer
        self._weights: tuple[dict[str, float], dict[str, float | None], float] | None = None

    def weights(self) -> tuple[dict[str, float], dict[str, float | None], float]:
        """(store idf, scope idf, scope ideal) of the searched keywords."""
        if self._weights is None:
            backend, scope = self.backend, self.scope
            total, _ = self.scorer._frequencies()
            # Counts within a scope are kept until the file changes: an assistant asks
            # within the same few scopes (a conversation, a project) again and again.
            cache = backend.content_cache()
            counting = scope.statement(backend, "recall_scope_term_rows", key=FTS_SCOPE_KEY)
            scope_key = ("scope_rows", counting, tuple(sorted(scope.bindings.items())))
            rows = remembered(cache, scope_key, lambda: backend.conn.execute(
                scope.statement(backend, "recall_scope_count"), scope.bindings).fetchone()[0])
            store: dict[str, float] = {}
            scoped: dict[str, float | None] = {}
            for term, hits in self.scorer.searched:
                store[term] = store_idf(total, hits)
                in_scope = remembered(cache, (scope_key, term), lambda term=term: backend.conn.execute(
                    counting, {**scope.bindings, "match": match_expression([term])}).fetchone()[0])
                scoped[term] = scope_idf(rows, in_scope) if in_scope else None
            self._weights = (store, scoped, scope_ideal(scoped))
        return self._weights

    def scores(self, candidates: list[dict[str, Any]]) -> dict[str, float]:
        """Keyword score by memory id for the candidates (absent = 0)."""
        pks = {c["_pk"]: c["id"] for c in candidates if "_pk" in c}
        if not pks or not self.scorer.searched:
            return {}
        store, scoped, ideal = self.weights()
        statement = self.backend.sql["recall_keyword_scores"].format(
            weights=bm25_weights_sql(self.backend.config.keyword_column_weights))
        # A memory's bm25 for one keyword depends only on the file's content (the keyword's
        # rows, the memory's own text, the mean length), so it is kept until the file
        # changes: an assistant's queries repeat their keywords (names, places), and the
        # same memories come back among the candidates.
        cache = self.backend.content_cache()
        known: dict[tuple[str, int], float | None] = {}
        if cache is not None:
            known = cache.setdefault(("keyword_term_bm25", statement), {})
            if len(known) > MAX_KEPT_TERM_SCORES:
                known.clear()
        # In a small scope the keywords' tables of its memories (keyword_tables.py) answer.
        tables = term_tables(self.backend, self.scope, self.scorer, bm25_weights_sql(
            self.backend.config.keyword_column_weights))
        position = {}
        for index, (term, _) in enumerate(self.scorer.searched):
            position.setdefault(term, index)
        per_term: dict[str, dict[str, float]] = {}
        for term in store:
            if scoped.get(term) is None:
                continue
            in_scope = scope_term_scores(tables, position[term], list(pks)) if tables is not None else None
            if in_scope is not None:
                per_term[term] = {pks[pk]: score for pk, score in in_scope.items() if score is not None}
                continue
            missing = [pk for pk in pks if (term, pk) not in known]
            if missing:
                found = dict(self.backend.conn.execute(statement, {
                    "match": match_expression([term]), "pks": json.dumps(missing)}))
                for pk in missing:
                    known[(term, pk)] = found.get(pk)
            scores = ((memory_id, known[(term, pk)]) for pk, memory_id in pks.items())
            per_term[term] = {memory_id: score for memory_id, score in scores if score is not None}
        return reweighted_scores(per_term, store, scoped, ideal)
