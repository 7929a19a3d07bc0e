"""Keyword hits in a small scope from per-keyword tables kept until the file changes.

FTS5's bm25 of a MATCH of several keywords is a sum over the keywords, each
part depending only on the file's content (the keyword's rows, the memory's
own text and length, the mean length), added one keyword after another. So
one keyword's bm25 for every memory of a scope that holds it, read once
(recall_keyword_term_scope.sql), gives by summing in the query's keyword
order the very bm25 recall_keyword_hits_listed.sql computes, to the last bit,
and the top hits in its order (best first, ties by key). An assistant's
queries within one scope (a conversation, a project) repeat their keywords
(names, places), so most of a query's keywords are already read; each table
holds at most the scope's memories that contain the keyword.

Used for scopes of at most TABLE_SCOPE_ROWS memories (counted from the
indexes): the scope's keys are kept as well, to tell a listed memory that
holds none of the keywords from one outside the scope.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from .keywords import KeywordScorer, match_expression
from .scope import FTS_SCOPE_KEY

if TYPE_CHECKING:
    from ..storage.backend import Backend


class Scope(Protocol):
    """What the tables read of channels.Scope (named here, so channels can import this module)."""

    bindings: dict[str, Any]

    @property
    def narrowed(self) -> bool: ...

    def size_bounds(self, backend: "Backend", cap: int) -> tuple[int | None, int | None]: ...

    def statement(self, backend: "Backend", name: str, *, driving: bool = True,
                  key: str | None = None) -> str: ...


# The largest scope (by the index-only counts) whose keyword tables and keys are kept.
TABLE_SCOPE_ROWS = 4000
# Rows (table rows and scope keys) kept at most, then started over: about 20 MB.
MAX_KEPT_ROWS = 200_000


class TermTables:
    """The searched keywords' tables and the scope's keys, for one query in one scope."""

    def __init__(self, tables: list[dict[int, float]], in_scope: frozenset[int]) -> None:
        self.tables = tables
        self.in_scope = in_scope

    def totals(self) -> dict[int, float]:
        """bm25 of the whole query for every memory in scope holding any keyword."""
        totals: dict[int, float] = {}
        for table in self.tables:  # the query's keyword order, as FTS5 adds them
            for pk, value in table.items():  # operators, not dict.get: ~900 calls a recall
                if pk in totals:
                    totals[pk] += value
                else:
                    totals[pk] = 0.0 + value
        return totals


def term_tables(backend: "Backend", scope: Scope, scorer: KeywordScorer, weights: str) -> TermTables | None:
    """The tables of the scorer's searched keywords in ``scope`` (read now when new), or
    None when they are not to be kept: inside a write transaction, or a scope that is not
    narrowed or holds more than TABLE_SCOPE_ROWS memories."""
    cache = backend.content_cache()
    if cache is None or not scope.narrowed or not scorer.searched:
        return None
    known = [b for b in scope.size_bounds(backend, TABLE_SCOPE_ROWS + 1) if b is not None]
    if not known or min(known) > TABLE_SCOPE_ROWS:
        return None
    statement = scope.statement(backend, "recall_keyword_term_scope", key=FTS_SCOPE_KEY).format(weights=weights)
    bindings = tuple(sorted(scope.bindings.items()))
    # Every table and key set lives in one entry of the content cache, which counts the
    # rows it holds and starts over beyond MAX_KEPT_ROWS: the cache's own bound counts
    # entries, and a table may hold thousands of rows.
    kept = cache.setdefault("keyword_term_tables", {"rows": 0})
    if kept["rows"] > MAX_KEPT_ROWS:
        kept.clear()
        kept["rows"] = 0

    def read(key: Any, compute: Any) -> Any:
        value = kept.get(key)
        if value is None:
            value = kept[key] = compute()
            kept["rows"] += len(value)
        return value

    keys = read(("scope_keys", scope.statement(backend, "recall_scope_pks"), bindings),
                lambda: _scope_keys(backend, scope))
    tables = [read(("term", statement, bindings, term),
                   lambda term=term: dict(backend.conn.execute(
                       statement, {**scope.bindings, "match": match_expression([term])})))
              for term, _ in scorer.searched]
    return TermTables(tables, keys)


def _scope_keys(backend: "Backend", scope: Scope) -> frozenset[int]:
    text = backend.conn.execute(scope.statement(backend, "recall_scope_pks"), scope.bindings).fetchone()[0]
    return frozenset(int(pk) for pk in text.split(",")) if text else frozenset()


def hits_from_tables(backend: "Backend", tables: TermTables, scorer: KeywordScorer, k: int,
                     listed: list[int], weights: str) -> tuple[tuple[int, float], ...]:
    """What keyword_hits gives from recall_keyword_hits_listed.sql: the top ``k`` hits in
    scope (best bm25 first, ties by key), the listed memories' bm25 noted to the scorer.
    A listed memory outside the scope is scored by recall_keyword_scores.sql."""
    totals = tables.totals()
    # (-bm25, key) tuples sort as the key (-hit[1], hit[0]) would, without a call per hit;
    # negating twice gives each float back exactly.
    hits = [(pk, -negated) for negated, pk in sorted([(-value, pk) for pk, value in totals.items()])[:k]]
    found: dict[int, float | None] = {}
    outside = []
    for pk in listed:
        if pk in tables.in_scope:
            found[pk] = totals.get(pk)
        else:
            outside.append(pk)
    if outside:
        statement = backend.sql["recall_keyword_scores"].format(weights=weights)
        scored = dict(backend.conn.execute(statement, {"match": scorer.match, "pks": json.dumps(outside)}))
        found.update({pk: scored.get(pk) for pk in outside})
    scorer.note_scores({pk: found[pk] for pk in listed})
    return tuple(hits)


def scope_term_scores(tables: TermTables, term_index: int, pks: list[int]) -> dict[int, float | None] | None:
    """One keyword's bm25 for memories in scope (None: the memory lacks it); None when some
    of ``pks`` lie outside the scope."""
    if not tables.in_scope.issuperset(pks):
        return None
    table = tables.tables[term_index]
    return dict(zip(pks, map(table.get, pks)))

