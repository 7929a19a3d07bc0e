"""Candidate channels of recall: vector kNN, FTS5 keywords, trending, metadata
and listed ids, all in SQL, each within the request's scope."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..storage.backend import remembered
from ..storage.records import rows_as_dicts, to_record
from ..timeparse import format_timestamp
from .keywords import KeywordScorer, bm25_weights_sql
from .keyword_tables import hits_from_tables, term_tables
from ..metadata_search import (
    metadata_match_score,
    metadata_scan_limit,
    metadata_slot_count,
    prefilter_terms,
)
from .params import RecallParams
from .scope import FTS_SCOPE_KEY, scope_clause
from .scoring import usable_cosine

if TYPE_CHECKING:
    from ..storage.backend import Backend


@dataclass(frozen=True)
class Scope:
    """The hard filters of a request: SQL bindings plus the clause for the filters in use."""

    params: RecallParams
    bindings: dict[str, Any]
    # (cap, bounds) of the last size_bounds count: the vector and keyword legs both ask.
    _sizes: list[tuple[int, tuple[int | None, int | None]]] = field(default_factory=list, compare=False)

    def size_bounds(self, backend: "Backend", cap: int) -> tuple[int | None, int | None]:
        """(memories with a filter tag, memories in the time window), each counted up to ``cap``
        from the indexes alone (None: no such filter). A count made with a larger cap answers."""
        for counted_cap, bounds in self._sizes:
            if counted_cap >= cap:
                return tuple(None if b is None else min(b, cap) for b in bounds)  # type: ignore[return-value]
        # Kept until the file changes too: a large count reads many index rows, and an
        # assistant asks within the same few scopes.
        bounds = remembered(backend.content_cache(), ("scope_size", tuple(sorted(self.bindings.items())), cap),
                            lambda: tuple(backend.conn.execute(backend.sql["recall_scope_size"],
                                                               {**self.bindings, "cap": cap}).fetchone()))
        self._sizes.append((cap, bounds))
        return bounds

    @property
    def narrowed(self) -> bool:
        """Whether tags or a time window restrict the memories considered."""
        return bool(self.params.tags) or self.params.has_window

    @property
    def epoch_window(self) -> tuple[float | None, float | None]:
        """The time window in unix seconds, for the code index's timestamp column."""
        p = self.params
        return (p.window_start.timestamp() if p.window_start else None,
                p.window_end.timestamp() if p.window_end else None)

    def statement(self, backend: "Backend", name: str, *, driving: bool = True,
                  key: str | None = None) -> str:
        return backend.sql.compose(name, scope=scope_clause(backend.sql, self.params,
                                                            driving=driving, key=key))


def make_scope(params: RecallParams, excluded_types: tuple[str, ...], *,
               with_tags: bool = True) -> Scope:
    """The scope of a request (``with_tags=False``: the same without its tag filter)."""
    if not with_tags:
        params = replace(params, tags=[])
    return Scope(params, {
        "excluded_types": json.dumps(list(excluded_types)),
        "window_start": format_timestamp(params.window_start) if params.window_start else None,
        "window_end": format_timestamp(params.window_end) if params.window_end else None,
        "tags": json.dumps(params.tags) if params.tags else None,
        "tag_match": params.tag_match,
        "tag_mode": params.tag_mode,
        "tag_count": len(params.tags),
        "exclude_tags": json.dumps(params.exclude_tags) if params.exclude_tags else None,
    })


def dated_scope(params: RecallParams, start: datetime, end: datetime,
                excluded_types: tuple[str, ...]) -> Scope | None:
    """The request's scope narrowed to ``start``–``end`` (a date the query names), or None
    when the request's own time window leaves nothing of it."""
    low = max(start, params.window_start) if params.window_start else start
    high = min(end, params.window_end) if params.window_end else end
    if low > high:
        return None
    return make_scope(replace(params, window_start=low, window_end=high), excluded_types)


def _candidate(row: dict[str, Any], match_type: str, match_score: float, source: str,
               similarity: float | None) -> dict[str, Any]:
    # ``source`` names the channel that found the memory (AutoMem: "qdrant" or "graph",
    # its two stores; neither exists here). See docs/recall-answer.md.
    candidate = {
        "id": row["id"],
        "memory": to_record(row),
        "match_type": match_type,
        "match_score": match_score,
        "source": source,
        "_similarity": similarity,
        "_pk": row["pk"],
        # The stored tags and metadata texts the record was parsed from: scoring reads
        # what it needs of them from caches keyed by the text (recall/scoring.py).
        "_texts": (row.get("tags"), row.get("metadata")),
    }
    if row.get("centre_cosine") is not None:  # read with the row when the statement was given a centre
        candidate["_centre_cosine"] = row["centre_cosine"]
    return candidate


# Restrict the code scan to the memories in scope when the scope holds at most
# this many memories; beyond that listing them costs more than widening the
# code kNN.
NARROW_SCOPE_ROWS = 20_000
# A broad scope widens the code kNN by the share of memories outside it, up to
# this k (each result asked for adds exact cosines to compute; the keyword
# channel fills in).
MAX_WIDENED_K = 64


# The narrow plan lists the memories having the scope's tags from the tag index
# alone (about 15× cheaper than reading each memory's row for the rest of the
# scope) and asks the kNN for this many more than wanted, for the ones the
# rest of the scope (archived, excluded types) turns away on the hits.
UNCHECKED_MARGIN = 8


def _vector_rows(backend: "Backend", scope: Scope, query_vector: bytes, k: int,
                 centre: bytes | None = None) -> list[dict[str, Any]]:
    """Pick the cheapest exact-enough plan for the scope.

    The time window is applied inside the code scan. Without tags: the code
    kNN. With tags, a narrow scope (≤ NARROW_SCOPE_ROWS memories) restricts
    the code scan to the memories having the tags, and the rest of the scope
    is checked on the hits: when it turns away so many that fewer than ``k``
    remain while more were in reach, the scan is redone among the memories
    the whole scope admits, so the answer is the same either way. A broad
    scope widens the code kNN by the share of memories outside it (up to
    MAX_WIDENED_K), then filters. Inside a write transaction with
    uncommitted vectors the code scan cannot answer, and every memory in
    scope is scored exactly.
    """
    if not scope.params.tags:
        return _knn_rows(backend, scope, query_vector, k, k, None, centre)
    tagged, _ = scope.size_bounds(backend, NARROW_SCOPE_ROWS + 1)
    if tagged > NARROW_SCOPE_ROWS:
        total = backend.conn.execute(backend.sql["memory_max_pk"]).fetchone()[0] or 0
        k_wanted = min(max(k, MAX_WIDENED_K), math.ceil(k * max(1, total) / tagged))
        return _knn_rows(backend, scope, query_vector, k, k_wanted, None, centre)
    # The tag index alone answers "any of the tags" (or one tag); "all of several",
    # and excluded tags, which may turn away most of the tagged, list the whole scope.
    tags_alone = (scope.params.tag_mode == "any" or len(scope.params.tags) == 1) \
        and not scope.params.exclude_tags
    if tags_alone:
        among = backend.conn.execute(backend.sql["recall_scope_tag_pks"], scope.bindings).fetchone()[0]
        k_wanted = k + UNCHECKED_MARGIN
        rows = _knn_rows(backend, scope, query_vector, k, k_wanted, among or "", centre)
        if len(rows) >= k or tagged <= k_wanted:  # the top k in scope, or all there is
            return rows
    among = backend.conn.execute(scope.statement(backend, "recall_scope_pks"), scope.bindings).fetchone()[0]
    return _knn_rows(backend, scope, query_vector, k, k, among or "", centre)


def _knn_rows(backend: "Backend", scope: Scope, query_vector: bytes, k: int, k_wanted: int,
              among: str | None, centre: bytes | None = None) -> list[dict[str, Any]]:
    knn = backend.vector_knn(query_vector, k_wanted, scope.epoch_window, among)
    if knn is None:
        cursor = backend.conn.execute(scope.statement(backend, "recall_vector_exact"),
                                      {**scope.bindings, "query_vector": query_vector, "k": k})
    else:
        cursor = backend.conn.execute(scope.statement(backend, "recall_vector", driving=False),
                                      {**scope.bindings, **knn, "centre": centre})
    return list(rows_as_dicts(cursor))


def vector_candidates(backend: "Backend", scope: Scope, query_vector: bytes,
                      k: int, centre: bytes | None = None) -> list[dict[str, Any]]:
    """The ``k`` nearest memories in scope. With ``centre`` (the store's mean vector as
    float32 bytes) each also gets its cosine to it (``_centre_cosine``), read from the
    embedding row the search reads anyway, for centred cosines (recall/centering.py)."""
    out = []
    for row in _vector_rows(backend, scope, query_vector, k, centre):
        similarity = usable_cosine(row["similarity"])
        if similarity is None:  # a zero, NaN or underflowing vector: nothing to rank by
            continue
        out.append(_candidate(row, "vector", similarity, "vector", similarity))
        if len(out) >= k:
            break
    return out


# Keep a query's keyword hits for the store's generation when its searched
# terms hold at least this many postings together: ranking them costs a bm25
# per posting (about 1 ms per thousand), and queries repeat their common terms.
CACHED_HITS_POSTINGS = 4000
CACHED_HITS_QUERIES = 256  # hit lists kept at most (each up to k pairs), then started over
# Score the other channels' finds in the hits' own pass only on stores up to
# this size: it materialises every hit in scope, which on a large store with a
# broad scope costs more than the second MATCH it saves (measured at 100k).
LISTED_PASS_ROWS = 20000


def keyword_hits(backend: "Backend", scope: Scope, scorer: KeywordScorer, k: int,
                 listed: list[int]) -> tuple[tuple[int, float], ...]:
    """The top ``k`` FTS5 hits (pk, bm25 with thread context), best first.

    Without tags or a time window they come straight from the index (the
    scope's few row checks follow in keyword_candidates). The same pass gives
    the scorer the bm25 of the ``listed`` memories (the other channels' finds),
    unless the hits come from the cache (and, within a narrowed scope, unless
    they are to be cached or the store holds more than LISTED_PASS_ROWS memories).
    """
    weights = bm25_weights_sql(backend.config.keyword_column_weights)
    bindings = {**scope.bindings, "match": scorer.match, "k": k}
    cache = backend.content_cache() if scorer.postings >= CACHED_HITS_POSTINGS else None
    if scope.narrowed and listed and cache is None and scorer.total <= LISTED_PASS_ROWS:
        tables = term_tables(backend, scope, scorer, weights)  # a small scope: the kept tables
        if tables is not None:
            return hits_from_tables(backend, tables, scorer, k, listed, weights)
        statement = scope.statement(backend, "recall_keyword_hits_listed",
                                    key=FTS_SCOPE_KEY).format(weights=weights)
        hits, found = [], {}
        for pk, bm25, top in backend.conn.execute(statement, {**bindings, "listed": json.dumps(listed)}):
            if top:
                hits.append((pk, bm25))
            else:
                found[pk] = bm25
        scorer.note_scores({pk: found.get(pk) for pk in listed})
        return tuple(hits)
    name = "recall_keyword_hits" if scope.narrowed else "recall_keyword_broad_hits"
    statement = scope.statement(backend, name, key=FTS_SCOPE_KEY).format(weights=weights)

    def ranked() -> tuple[tuple[int, float], ...]:
        # Without tags or a time window the listed memories' bm25 comes along from the
        # same pass; the hits are the same either way (and are kept whatever was listed).
        if not scope.narrowed and listed:
            return _broad_hits_listed(backend, scorer, k, listed, weights)
        return _ranked_hits(backend, scope, statement, bindings, weights)

    if cache is None:
        return ranked()
    kept = cache.setdefault("keyword_hits", {})
    key = (statement, scorer.match, k, tuple(sorted(scope.bindings.items())) if scope.narrowed else None)
    hits = kept.get(key)
    if hits is None:
        if len(kept) >= CACHED_HITS_QUERIES:
            kept.clear()
        hits = kept[key] = ranked()
    return hits


def _broad_hits_listed(backend: "Backend", scorer: KeywordScorer, k: int, listed: list[int],
                       weights: str) -> tuple[tuple[int, float], ...]:
    """The top ``k`` hits without tags or a time window, and the listed memories' bm25
    noted to the scorer, from one MATCH pass (recall_keyword_broad_hits_listed.sql)."""
    statement = backend.sql["recall_keyword_broad_hits_listed"].format(weights=weights)
    found: dict[int, float] = {}
    others: list[tuple[int, float]] = []
    for pk, bm25, is_listed in backend.conn.execute(statement, {
            "match": scorer.match, "k": k, "listed": json.dumps(listed)}):
        if is_listed:
            found[pk] = bm25
        else:
            others.append((pk, bm25))
    scorer.note_scores({pk: found.get(pk) for pk in listed})
    # Best bm25 first, ties by pk: the order of recall_keyword_broad_hits.sql.
    merged = sorted([*found.items(), *others], key=lambda hit: (-hit[1], hit[0]))
    return tuple(merged[:k])


# A broad tag scope's keyword hits are first looked for among this many times
# as many of the store's best hits as its share of the store should hold
# (at most MAX_UNSCOPED_HITS), then checked against the scope.
UNSCOPED_HITS_FACTOR = 2
MAX_UNSCOPED_HITS = 1000


def _ranked_hits(backend: "Backend", scope: Scope, statement: str, bindings: dict[str, Any],
                 weights: str) -> tuple[tuple[int, float], ...]:
    """The top :k hits of ``statement``, found the cheap way when the scope is broad.

    bm25 does not depend on the scope, so within a tag scope holding a large
    share of the store the best hits of the whole store, checked against the
    scope, are the scope's best hits as long as at least :k of them pass:
    ranking from the index reads no memories row, where the scoped statement
    reads one per hit to check it. When fewer pass, the scoped statement answers.
    """
    k = bindings["k"]
    if scope.params.tags and not scope.params.has_window:
        tagged, _ = scope.size_bounds(backend, NARROW_SCOPE_ROWS + 1)
        total = backend.conn.execute(backend.sql["memory_max_pk"]).fetchone()[0] or 0
        # The plan needs a share of the store it can reach with MAX_UNSCOPED_HITS hits;
        # on a large store, counting (up to that many) tells whether the scope has it.
        needed = math.ceil(UNSCOPED_HITS_FACTOR * k * total / MAX_UNSCOPED_HITS)
        if NARROW_SCOPE_ROWS < tagged < needed:
            tagged, _ = scope.size_bounds(backend, needed)
        if tagged > NARROW_SCOPE_ROWS and tagged >= needed:
            wide = min(MAX_UNSCOPED_HITS, math.ceil(UNSCOPED_HITS_FACTOR * k * total / tagged))
            unscoped = backend.sql["recall_keyword_broad_hits"].format(weights=weights)
            top = list(backend.conn.execute(unscoped, {"match": bindings["match"], "k": wide}))
            admitted = {pk for (pk,) in backend.conn.execute(
                scope.statement(backend, "recall_scope_admits", driving=False),
                {**scope.bindings, "pks": json.dumps([pk for pk, _ in top])})}
            hits = [hit for hit in top if hit[0] in admitted]
            if len(hits) >= k or len(top) < wide:
                return tuple(hits[:k])
    return tuple(backend.conn.execute(statement, bindings))


def keyword_candidates(backend: "Backend", scope: Scope, scorer: KeywordScorer,
                       query_vector: bytes | None, k: int,
                       listed: list[int] | None = None, centre: bytes | None = None,
                       found: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """FTS5 hits in scope, best BM25 (with thread context) first; the score is set later.

    ``listed``: pks the other channels found, whose bm25 the scorer may learn on the way.
    ``centre``: as for vector_candidates. ``found``: the id by pk of memories the caller
    already holds as candidates (found in the same scope): their rows are not read again,
    and each stands in the list as ``{"id": id}`` only, so that the list counts every hit.
    """
    if scorer.match is None:
        return []
    hits = keyword_hits(backend, scope, scorer, k, listed or [])
    if not hits:
        return []
    found = found or {}
    # A narrowed scope was applied while ranking; the broad one's checks are applied here.
    clause = "1" if scope.narrowed else scope_clause(backend.sql, scope.params, driving=False)
    statement = backend.sql.compose("recall_keyword_rows", scope=clause)
    rows = {row["pk"]: row for row in rows_as_dicts(backend.conn.execute(statement, {
        **scope.bindings, "pks": json.dumps([pk for pk, _ in hits if pk not in found]),
        "query_vector": query_vector, "centre": centre}))}
    out = []
    for pk, bm25 in hits:
        if pk in found:
            out.append({"id": found[pk]})
            continue
        row = rows.get(pk)
        if row is None:
            continue
        candidate = _candidate(row, "keyword", 0.0, "keyword", usable_cosine(row["similarity"]))
        candidate["_bm25"] = bm25  # the same terms and weights as the keyword score
        out.append(candidate)
    return out


def trending_candidates(backend: "Backend", scope: Scope, k: int) -> list[dict[str, Any]]:
    rows = rows_as_dicts(backend.conn.execute(scope.statement(backend, "recall_trending"), {
        **scope.bindings, "order_by": scope.params.sort, "k": k}))
    return [_candidate(row, "trending", float(row["importance"]), "trending", None) for row in rows]


# Value terms in at least this many metadata rows are looked for by walking
# memories in importance order (the order the sidecar keeps) rather than by
# collecting every memory that has them: the same rows either way.
COMMON_METADATA_ROWS = 2000


def metadata_candidates(backend: "Backend", scope: Scope, query: str, limit: int,
                        seen: set[str]) -> list[dict[str, Any]]:
    """The metadata sidecar: strong matches of whitelisted metadata values.

    Returns up to ``max(1, min(limit, 10))`` new candidates plus "upgrades"
    of already-seen ones (the later dedup keeps the higher-scored copy).
    """
    terms = prefilter_terms(query)
    if not terms:
        return []
    bindings = {**scope.bindings, "terms": json.dumps(terms), "k": metadata_scan_limit(limit)}
    # Kept until the file changes: queries repeat their value terms (a source, a speaker).
    rows = remembered(backend.content_cache(), ("metadata_term_rows", bindings["terms"], COMMON_METADATA_ROWS),
                      lambda: backend.conn.execute(backend.sql["recall_metadata_term_rows"], {
                          "terms": bindings["terms"], "cap": COMMON_METADATA_ROWS}).fetchone()[0])
    if rows == 0:  # no memory has any of the terms (the usual case): nothing to look for
        return []
    common = rows >= COMMON_METADATA_ROWS
    name = "recall_metadata_common" if common else "recall_metadata"
    rows = rows_as_dicts(backend.conn.execute(scope.statement(backend, name, driving=False), bindings))
    scored = []
    for row in rows:
        score = metadata_match_score(query, row["metadata"])
        if score > 0:
            candidate = _candidate(row, "metadata", score, "metadata", None)
            candidate["_metadata_score"] = score
            scored.append(candidate)
    scored.sort(key=lambda c: -c["match_score"])
    new = [c for c in scored if c["id"] not in seen][: metadata_slot_count(limit)]
    upgrades = [c for c in scored if c["id"] in seen]
    return new + upgrades


def priority_candidates(backend: "Backend", scope: Scope,
                        memory_ids: list[str]) -> list[dict[str, Any]]:
    """Listed ids fetched directly (match_type priority_id), only those within the scope."""
    if not memory_ids:
        return []
    rows = rows_as_dicts(backend.conn.execute(scope.statement(backend, "recall_by_ids", driving=False), {
        **scope.bindings, "ids": json.dumps(memory_ids)}))
    return [_candidate(row, "priority_id", 0.0, "priority", None) for row in rows]
