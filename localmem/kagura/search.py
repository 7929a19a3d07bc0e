"""The two search arms and how they are mixed.

- semantic: the code index's kNN of the query vector within the scope (raw cosine);
- keyword: FTS5 BM25 within the scope (content and thread-context columns,
  the same column weights as recall).

``hybrid`` (the default) runs both, fills in the other arm's score for
every candidate (its cosine from the stored embedding, its BM25 by pk),
normalises each arm by its best score in this request and mixes them
``(w_s · semantic + w_k · keyword) / (w_s + w_k)`` (0.6 / 0.4 by default,
``LOCALMEM_V1_SEMANTIC_WEIGHT`` / ``LOCALMEM_V1_KEYWORD_WEIGHT``).
In ``hybrid``, a candidate with token codes brings its late-interaction
MaxSim (recall/late_interaction.py) to the semantic side instead of its
cosine, normalised the same way; the raw cosine stays in its components and
drives ``confidence`` as the spec says. ``semantic`` scores by raw cosine;
``keyword`` by BM25 over the best BM25.
The semantic arm's nearest neighbours in scope are all kept, however weak:
a scope that holds memories with vectors never answers an empty list there
(``confidence`` reads ``none`` instead).
Without a usable embedder (or when the vector index fails) both ``hybrid`` and
``semantic`` fall back to the keyword arm and say so (``degraded``).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import apsw

from ..embedders import EmbedderUnavailable
from ..embedders.query_delta import QueryDelta
from ..storage.backend import remembered
from ..storage.records import rows_as_dicts, to_record
from ..recall.keywords import bm25_weights_sql, match_expression, query_terms
from ..recall.late_interaction import QueryAdapter, TokenMatch, token_matches
from ..recall.scoring import usable_cosine
from .scope import SearchScope

if TYPE_CHECKING:
    from ..storage.backend import Backend, QueryEncoding

logger = logging.getLogger("localmem.kagura")

MIN_POOL = 50            # candidates per arm at least (the confidence background too)
MAX_KNN = 4096


@dataclass
class Candidate:
    """One memory found by the search, with its evidence from each arm."""

    pk: int
    memory: dict[str, Any]
    cosine: float | None = None   # raw cosine to the query vector
    bm25: float = 0.0             # raw BM25 (0: no keyword match)
    semantic: float = 0.0         # cosine (or MaxSim) normalised by the best of the request
    maxsim: float | None = None   # late-interaction MaxSim over token codes (recall/late_interaction.py)
    token_match: TokenMatch | None = None  # the MaxSim and how its tokens matched
    keyword: float = 0.0          # BM25 normalised by the best BM25 of the request
    score: float = 0.0
    learned: float | None = None  # the learned-rank component (kagura/learned.py), when scored
    arms: set[str] = field(default_factory=set)
    found: bool = True  # False: brought in by the chain walk (a head), not by the search

    @property
    def id(self) -> str:
        return self.memory["id"]

    def components(self) -> dict[str, Any]:
        if not self.found:
            return {"semantic": None, "keyword": None, "cosine": None, "bm25": None, "maxsim": None}
        components = {"semantic": round(self.semantic, 6), "keyword": round(self.keyword, 6),
                      "cosine": None if self.cosine is None else round(self.cosine, 6),
                      "bm25": round(self.bm25, 6),
                      "maxsim": None if self.maxsim is None else round(self.maxsim, 6)}
        if self.learned is not None:
            components["learned"] = round(self.learned, 6)
        return components


@dataclass
class SearchOutcome:
    candidates: list[Candidate]
    semantic_pool: list[Candidate]      # the semantic arm's hits, nearest first
    semantic_ran: bool
    degraded_reason: str | None
    query_vector: bytes | None
    # Cosine of the last kNN neighbour when the kNN was cut at its k (the
    # pool then holds every in-scope memory at least this close); None when
    # the kNN returned everything there was.
    knn_cutoff: float | None
    pool_size: int
    # Why the learned model's query delta could not encode the query (its MaxSim is then
    # the plain tokens', and the model must not rank); None when it did or there is none.
    delta_failure: str | None = None


def pool_size(backend: "Backend", k: int) -> int:
    config = backend.config
    return max(k, min(config.vector_fetch_cap, max(MIN_POOL, k * config.vector_overfetch)))


def _query_vector(backend: "Backend", query: str, delta: QueryDelta | None = None
                  ) -> tuple[bytes | None, Any, str | None, QueryEncoding | None]:
    """The query's vector, its token vectors (None without token evidence), why there is
    no vector, and the whole encoding (with ``delta``'s tuned tokens from the same run)."""
    if backend.embedder is None or not backend.has_vector_index:
        return None, None, "embedding_unavailable", None
    try:
        found = backend.embed_query(query, delta)
    except EmbedderUnavailable:
        found = None
    except Exception:  # a broken embedder must not break recall: keyword arm only
        logger.exception("Embedding the recall query failed")
        found = None
    if found is None or not found.vector:
        return None, None, "embedding_unavailable", None
    return found.vector, found.tokens, None, found


# A listed scope's code kNN asks for LISTED_DEPTH times the pool and LISTED_MARGIN more
# (for the ones the rest of the scope turns away) before the exact scan of the scope
# answers instead. At 8 times the pool its nearest in scope were those of the exact scan
# on all 80 tag-scoped requests of scale_v1.py's workload (at 4 times, 6 pools differed
# in a neighbour; the pool's mean cosine is confidence's background).
LISTED_MARGIN = 8
LISTED_DEPTH = 8


@dataclass
class Listing:
    """The memories a tag or context index finds for a scope (the rest of the scope is
    checked on the hits): how many, and their keys (comma-separated), or None when they
    are most of the store and the store-wide searches, checked, find its nearest sooner."""

    count: int
    total: int  # memories in the store, at most (the largest key)
    pks: str | None
    by_tags: bool  # listed by the tag index: every listed memory passes the scope's tag filter

    def bindings(self, scope: SearchScope) -> dict[str, Any]:
        """kagura_scope_filter's bindings for hits among the listed memories: without the tag
        filter when the listing applied it (its test materialises every tagged memory)."""
        return scope.bindings(with_tags=not (self.by_tags and self.pks is not None))


def _scope_listing(backend: "Backend", scope: SearchScope) -> Listing | None:
    """The memories having the scope's tags, else of its contexts, from an index alone;
    None when neither narrows the scope. Counts are kept until the file changes."""
    bindings = scope.bindings()
    if scope.filters.tags:
        names = ("kagura_scope_tag_count", "kagura_scope_tag_pks")
        params = {"tags": bindings["tags"], "tag_mode": bindings["tag_mode"], "tag_count": bindings["tag_count"]}
    elif scope.contexts is not None:
        names = ("kagura_scope_context_count", "kagura_scope_context_pks")
        params = {"contexts": scope.contexts_json}
    else:
        return None
    cache = backend.content_cache()
    count = remembered(cache, ("kagura_scope_count", names[0], tuple(sorted(params.items()))),
                       lambda: backend.conn.execute(backend.sql[names[0]], params).fetchone()[0])
    total = remembered(cache, ("kagura_max_pk",),
                       lambda: backend.conn.execute(backend.sql["memory_max_pk"]).fetchone()[0] or 0)
    by_tags = bool(scope.filters.tags)
    if 2 * count > total:
        return Listing(count, total, None, by_tags)
    return Listing(count, total, backend.conn.execute(backend.sql[names[1]], params).fetchone()[0] or "", by_tags)


def _listed_rows(backend: "Backend", scope: SearchScope, vector: bytes, size: int, listing: Listing | None
                 ) -> list[dict[str, Any]] | None:
    """The ``size`` nearest memories in a scope narrowed by tags or contexts, by the code
    kNN among the memories the index lists (store-wide when they are most of the store,
    as many more as the rest of the store holds), the rest of the scope checked on the
    hits, as kagura_vector_scoped.sql would give them; None when the code index cannot
    answer (uncommitted vectors, types or scope alone narrowing) or the scope turned away
    so many hits that fewer than ``size`` remain while more were in reach."""
    if listing is None:
        return None
    if listing.pks is None:
        wanted = LISTED_DEPTH * math.ceil(size * max(1, listing.total) / max(1, listing.count)) + LISTED_MARGIN
        knn = backend.vector_knn(vector, wanted)
    else:
        wanted = LISTED_DEPTH * size + LISTED_MARGIN
        knn = backend.vector_knn(vector, wanted, among=listing.pks)
    if knn is None:
        return None
    rows = list(rows_as_dicts(backend.conn.execute(backend.sql["kagura_vector_listed"],
                                                   {**listing.bindings(scope), **knn, "size": size})))
    if len(rows) < size and listing.count > wanted:  # more memories in scope than the kNN gave
        return None
    return rows


def _semantic_arm(backend: "Backend", scope: SearchScope, vector: bytes, size: int,
                  listing: Listing | None = None) -> tuple[list[Candidate], float | None]:
    size = min(size, MAX_KNN)
    if scope.unfiltered:
        knn = backend.vector_knn(vector, size)
        rows = None if knn is None else list(rows_as_dicts(backend.conn.execute(
            backend.sql["kagura_vector"], {**scope.bindings(), **knn})))
    else:
        rows = _listed_rows(backend, scope, vector, size, listing)
    if rows is None:  # uncommitted vectors, or a scope the indexes cannot list: exact cosines
        rows = list(rows_as_dicts(backend.conn.execute(backend.sql["kagura_vector_scoped"], {
            **scope.bindings(), "query_vector": vector, "k": size})))
    cutoff = None
    if len(rows) >= size and rows:
        cutoff = usable_cosine(rows[-1]["similarity"])
    out = []
    for row in rows:
        cosine = usable_cosine(row["similarity"])  # None: a zero, NaN or underflowing vector
        if not row["in_scope"] or cosine is None:
            continue
        out.append(Candidate(pk=row["pk"], memory=to_record(row), cosine=cosine, arms={"semantic"}))
    return out, cutoff


def _keyword_arm(backend: "Backend", scope: SearchScope, match: str, vector: bytes | None,
                 size: int) -> list[Candidate]:
    # The recall keyword channel's statement, with Kagura's scope in its scope slot.
    statement = backend.sql.compose(
        "recall_keyword", scope=backend.sql.fragment("kagura_scope_filter")
    ).format(weights=bm25_weights_sql(backend.config.keyword_column_weights))
    rows = rows_as_dicts(backend.conn.execute(statement, {
        **scope.bindings(), "match": match, "query_vector": vector, "k": size}))
    out = []
    for row in rows:
        out.append(Candidate(pk=row["pk"], memory=to_record(row), cosine=usable_cosine(row["similarity"]),
                             bm25=max(0.0, float(row["bm25"] or 0.0)), arms={"keyword"}))
    return out


MAX_BROAD_HITS = 1000  # store-wide hits ranked at most for a scope holding most of the store
# The keyword arm ranks this many hits beyond its pool from the index,
# for the ones the scope turns away (archived, excluded types), before falling back.
UNSCOPED_MARGIN = 16


def _indexed_keyword_arm(backend: "Backend", scope: SearchScope, match: str, vector: bytes | None,
                         size: int, listed: dict[int, Candidate], listing: Listing | None
                         ) -> list[Candidate] | None:
    """The keyword arm, and the bm25 of the ``listed`` candidates (the semantic arm's) set
    on them, from one MATCH pass ranked from the index alone (no memories row read per
    hit, most of the scoped statement's cost on a large store): in an unfiltered scope, or
    one holding most of the store, recall's recall_keyword_broad_hits_listed.sql (as many
    more hits as the rest of the store holds), else among the memories a tag or context
    index lists (``listing``), the rest of the scope checked on the hits. None when fewer
    than ``size`` of them pass and more hits exist, or the scope is neither: the scoped
    statement answers then. The same hits and scores as _keyword_arm and fill_bm25."""
    if not scope.unfiltered and listing is None:
        return None
    weights = bm25_weights_sql(backend.config.keyword_column_weights)
    wide = size + UNSCOPED_MARGIN
    found: dict[int, float] = {}
    others: list[tuple[int, float]] = []
    name, bindings = "recall_keyword_broad_hits_listed", {"match": match, "k": wide, "listed": json.dumps(list(listed))}
    broad = listing is not None and listing.pks is None
    if broad:
        assert listing is not None
        bindings["k"] = wide = min(MAX_BROAD_HITS, math.ceil(wide * max(1, listing.total) / max(1, listing.count)))
    elif listing is not None:
        name, bindings["among"] = "kagura_keyword_listed_hits", f"[{listing.pks}]"
    for pk, bm25, is_listed in backend.conn.execute(backend.sql[name].format(weights=weights), bindings):
        if is_listed:
            found[pk] = bm25
        else:
            others.append((pk, bm25))
    # Best bm25 first, ties by pk: the order of recall_keyword_broad_hits.sql.
    ranked = sorted([*found.items(), *others], key=lambda hit: (-hit[1], hit[0]))
    unlisted = [pk for pk, _ in ranked if pk not in listed]
    if broad and unlisted:  # some hits fall outside the scope: read only the rows kept
        admitted = {pk for (pk,) in backend.conn.execute(backend.sql["kagura_scope_admits"], {
            **scope.bindings(), "pks": json.dumps(unlisted)})}
        ranked = [hit for hit in ranked if hit[0] in listed or hit[0] in admitted]
        unlisted = [pk for pk, _ in ranked[:size] if pk not in listed]
    checks = listing.bindings(scope) if listing is not None else scope.bindings()
    rows = {row["pk"]: row for row in rows_as_dicts(backend.conn.execute(
        backend.sql["kagura_keyword_rows"], {**checks, "pks": json.dumps(unlisted),
                                             "query_vector": vector}))} if unlisted else {}
    out: list[Candidate] = []
    for pk, bm25 in ranked:
        if len(out) >= size:
            break
        if pk in listed:
            out.append(Candidate(pk=pk, memory=listed[pk].memory, bm25=max(0.0, float(bm25 or 0.0)),
                                 arms={"keyword"}))
        elif (row := rows.get(pk)) is not None:
            out.append(Candidate(pk=pk, memory=to_record(row), cosine=usable_cosine(row["similarity"]),
                                 bm25=max(0.0, float(bm25 or 0.0)), arms={"keyword"}))
    if len(out) < size and len(found) + len(others) >= wide + len(listed):  # more hits exist
        return None
    for pk, candidate in listed.items():
        candidate.bm25 = max(0.0, float(found.get(pk) or 0.0))
    return out


def fill_bm25(backend: "Backend", match: str, candidates: list[Candidate]) -> None:
    """The raw BM25 of the candidates the keyword arm did not score (0: no match)."""
    missing = [c for c in candidates if "keyword" not in c.arms]
    if not missing:
        return
    statement = backend.sql["kagura_keyword_scores"].format(
        weights=bm25_weights_sql(backend.config.keyword_column_weights))
    scores = {pk: score for pk, score in backend.conn.execute(
        statement, {"match": match, "pks": json.dumps([c.pk for c in missing])})}
    for candidate in missing:
        candidate.bm25 = max(0.0, float(scores.get(candidate.pk) or 0.0))


def _fill_cosine(backend: "Backend", vector: bytes, candidates: list[Candidate]) -> None:
    missing = [c for c in candidates if c.cosine is None]
    if not missing:
        return
    rows = backend.conn.execute(backend.sql["kagura_similarity"], {
        "pks": json.dumps([c.pk for c in missing]), "query_vector": vector})
    cosine = {pk: usable_cosine(value) for pk, value in rows}
    for candidate in missing:
        if cosine.get(candidate.pk) is not None:
            candidate.cosine = cosine[candidate.pk]


def _fill_maxsim(backend: "Backend", query_tokens: Any, candidates: list[Candidate],
                 adapter: QueryAdapter | None) -> None:
    """Late-interaction MaxSim of the candidates that have token codes: the hybrid's
    semantic evidence for them (their raw cosine still drives ``confidence``)."""
    found = token_matches(backend, [{"id": c.id} for c in candidates if c.found], query_tokens, adapter)
    for candidate in candidates:
        candidate.token_match = found.get(candidate.id)
        candidate.maxsim = candidate.token_match.max_sim if candidate.token_match is not None else None


def rank(candidates: list[Any], score: Any = None) -> None:
    """Sort in place: score desc, then importance desc, newest first, id (stable passes).

    ``score`` maps an item to its score (default ``item.score``); items carry ``memory``.
    """
    key = score or (lambda c: c.score)
    candidates.sort(key=lambda c: c.memory["id"])
    candidates.sort(key=lambda c: c.memory.get("timestamp") or "", reverse=True)
    candidates.sort(key=lambda c: (key(c), float(c.memory.get("importance") or 0.0)), reverse=True)


def run_search(backend: "Backend", query: str, mode: str, scope: SearchScope, k: int,
               adapter: QueryAdapter | None = None, delta: QueryDelta | None = None) -> SearchOutcome:
    """Candidates of one request, scored and sorted best first (``adapter`` and ``delta``:
    the learned model's, for the hybrid's MaxSim)."""
    size = pool_size(backend, k)
    match = match_expression(query_terms(query))
    vector: bytes | None = None
    degraded: str | None = None
    semantic: list[Candidate] = []
    cutoff: float | None = None
    semantic_ran = False
    query_tokens: Any = None
    encoding: QueryEncoding | None = None
    listing: Listing | None = None  # the memories a tag or context index finds for the scope
    if mode in ("hybrid", "semantic"):
        vector, query_tokens, degraded, encoding = _query_vector(
            backend, query, delta if mode == "hybrid" else None)
        if vector is not None:
            try:
                listing = None if scope.unfiltered else _scope_listing(backend, scope)
                semantic, cutoff = _semantic_arm(backend, scope, vector, size, listing)
                semantic_ran = True
            except apsw.Error:
                logger.exception("Vector search failed; answering from the keyword arm")
                vector, degraded = None, "vector_search_unavailable"
    use_keyword = mode in ("hybrid", "keyword") or not semantic_ran
    keyword: list[Candidate] = []
    listed_bm25 = False  # whether the semantic hits' bm25 came with the keyword arm
    if use_keyword and match is not None:
        if listing is None and not scope.unfiltered:
            listing = _scope_listing(backend, scope)
        found = _indexed_keyword_arm(backend, scope, match, vector, size, {c.pk: c for c in semantic}, listing)
        listed_bm25 = found is not None
        keyword = found if found is not None else _keyword_arm(backend, scope, match, vector, size)

    merged: dict[int, Candidate] = {c.pk: c for c in semantic}
    for candidate in keyword:
        present = merged.get(candidate.pk)
        if present is None:
            merged[candidate.pk] = candidate
        else:
            present.bm25 = candidate.bm25
            present.arms.add("keyword")
    candidates = list(merged.values())
    if semantic_ran and use_keyword and match is not None and not listed_bm25:
        fill_bm25(backend, match, candidates)
    if semantic_ran and vector is not None:
        _fill_cosine(backend, vector, candidates)
    delta_failure: str | None = None
    if semantic_ran and query_tokens is not None and mode == "hybrid":
        if delta is not None and encoding is not None:
            if encoding.tuned is not None:
                query_tokens = encoding.tuned
            else:
                delta_failure = encoding.tuned_error or "the embedder gave no tuned token vectors"
        # Without its delta the model does not rank, and its adapter does not apply either.
        _fill_maxsim(backend, query_tokens, candidates, adapter if delta_failure is None else None)
    # Every semantic hit stays, however weak (a cosine of 0 or below included): like
    # Kagura, recall answers with its top k and lets ``confidence`` say how weak they are.

    best_cosine = max((c.cosine for c in semantic if c.cosine is not None and c.cosine > 0), default=0.0)
    best_maxsim = max((c.maxsim for c in candidates if c.maxsim is not None and c.maxsim > 0), default=0.0)
    best_bm25 = max((c.bm25 for c in candidates), default=0.0)
    ws, wk = backend.config.v1_semantic_weight, backend.config.v1_keyword_weight
    if ws + wk <= 0:
        ws, wk = 0.6, 0.4
    for c in candidates:
        if semantic_ran and best_maxsim > 0 and c.maxsim is not None:
            c.semantic = min(1.0, max(0.0, c.maxsim) / best_maxsim)
        elif semantic_ran and best_cosine > 0 and c.cosine is not None:
            c.semantic = min(1.0, max(0.0, c.cosine) / best_cosine)
        if best_bm25 > 0:
            c.keyword = min(1.0, c.bm25 / best_bm25)
        if not semantic_ran:
            c.score = c.keyword
        elif mode == "semantic":
            c.score = c.cosine if c.cosine is not None else 0.0
        else:
            c.score = (ws * c.semantic + wk * c.keyword) / (ws + wk)
    rank(candidates)
    return SearchOutcome(candidates=candidates, semantic_pool=semantic, semantic_ran=semantic_ran,
                         degraded_reason=degraded if not semantic_ran and mode != "keyword" else None,
                         query_vector=vector, knn_cutoff=cutoff, pool_size=size,
                         delta_failure=delta_failure)
