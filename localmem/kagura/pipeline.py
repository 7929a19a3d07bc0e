"""POST /api/v1/memory/recall over a MemoryStore: request → scope → search →
learned component → supersession folding → rerank → cut → annotations → response."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..recall.learned_rank import TreeModel
from ..timeparse import format_timestamp
from ..recall.confidence_bands import keyword_confidence, semantic_confidence
from ..recall.keywords import KeywordScorer, match_expression, query_terms
from ..recall.late_interaction import token_score
from ..recall.relevance import with_relevance
from ..recall.relevance_model import PROMPT_INPUTS, keyword_coverage, reciprocal_ranks, relevance_features, relevance_of
from ..recall.scoring import usable_cosine
from .content import SpanFinder, content_fields
from .duplicates import contradictions, near_duplicates
from .folding import Entry, fold, versions
from .hints import explore_hints, related_tags, tag_suggestions
from .learned import add_learned, learned_model
from .request import RecallRequest, parse_request
from .rerank import rerank
from .scope import SearchScope, resolve_scope
from .search import Candidate, SearchOutcome, fill_bm25, run_search

if TYPE_CHECKING:
    from ..storage.backend import Backend

SELECTOR = {"applied": False, "reason": "no_provider"}


def _metadata_text(metadata: dict[str, Any], key: str) -> str | None:
    value = metadata.get(key)
    return value if isinstance(value, str) and value.strip() else None


def memory_response(candidate: Candidate, score: float | None, *, folded: bool) -> dict[str, Any]:
    """The MemoryResponse fields of one row (annotations are filled in later)."""
    m = candidate.memory
    metadata = m.get("metadata") or {}
    scope = metadata.get("scope")
    return {
        "memory_id": m["id"],
        "summary": m.get("summary") or "",
        "context_summary": _metadata_text(metadata, "context_summary"),
        "type": m["type"],
        "importance": m["importance"],
        "scope": str(scope).lower() if scope is not None else "persistent",
        "created_at": m["timestamp"],
        "updated_at": m["updated_at"],
        "client": _metadata_text(metadata, "client"),
        "tags": list(m.get("tags") or []),
        "context": m["context"],
        "score": None if score is None else round(score, 6),
        "source_uri": _metadata_text(metadata, "source_uri"),
        "source_type": _metadata_text(metadata, "source_type"),
        "superseded_by": None,
        "contradicts": [],
        "supersede_candidate": None,
        "folded": folded,
        "version": 1,
        "content": None,
        "content_truncated": None,
        "content_next_offset": None,
        "spans": [],
    }


def _confidence(outcome: SearchOutcome, fold_dropped: set[str], result_count: int,
                backend: "Backend", entries: list[Entry]) -> dict[str, Any]:
    if outcome.semantic_ran:
        cosines = [c.cosine for c in outcome.semantic_pool
                   if c.cosine is not None and c.id not in fold_dropped]
        return semantic_confidence(cosines, result_count, backend.config.v1_confidence_bands,
                                   backend.config.v1_near_duplicate)
    scores = [c.score for c in outcome.candidates if c.id not in fold_dropped]
    top = entries[0].score if entries else None
    return keyword_confidence(scores, result_count, top)


def _attach_relevance(backend: "Backend", query: str, outcome: SearchOutcome,
                      rows: list[tuple[Candidate, dict[str, Any]]]) -> None:
    """Each row's ``relevance`` (recall/relevance_model.py) from its own evidence, and its
    inputs as ``score_components.relevance_inputs``. A head the chain walk brought in (not
    found by the search) is judged on its own cosine to the query and its own words, not
    left without evidence because the memory it replaces was found instead."""
    terms = query_terms(query) if query else []
    walked = [candidate.id for candidate, _ in rows if not candidate.found]
    match = match_expression(terms) if terms else None
    if match is not None and walked:  # a walked-in head's own words, scored as the search scores them
        fill_bm25(backend, match, [candidate for candidate, _ in rows if not candidate.found])
    # The keyword input as recall reads it: BM25 over the BM25 of a memory matching every
    # searched term once (not over the best of this answer, which would read the others).
    ideal = KeywordScorer(backend, query).ideal if query and any(c.bm25 > 0 for c, _ in rows) else 0.0
    cosines: dict[str, float] = {}
    if walked and outcome.query_vector is not None:
        cosines = {memory_id: usable_cosine(value) for memory_id, value in backend.conn.execute(
            backend.sql["recall_similarity"], {"ids": json.dumps(walked), "query_vector": outcome.query_vector})}
    # Places by the search's score (not the reranked order: reranking leaves relevance as it was);
    # a folded older version shares the place of the head it follows.
    heads = iter(reciprocal_ranks([row["score"] for _, row in rows if not row["folded"]]))
    place = 0.0
    for candidate, row in rows:
        if not row["folded"]:
            place = next(heads)
        cosine = candidate.cosine if candidate.found else cosines.get(candidate.id)
        if candidate.found and candidate.maxsim is not None:
            token = token_score(candidate.maxsim)
        else:
            token = max(0.0, cosine) if cosine is not None else 0.0
        features = relevance_features(cosine=cosine, coverage=keyword_coverage(terms, candidate.memory.get("content")),
                                      token=token, keyword=candidate.bm25 / ideal if ideal > 0 else 0.0,
                                      reciprocal_rank=place)
        for name in PROMPT_INPUTS:  # recall's alone (the shipped model does not weigh them): not shown as 0 here
            del features[name]
        row["score_components"]["relevance_inputs"] = features
        row["relevance"] = relevance_of(features)


def run_recall_v1(backend: "Backend", raw: Mapping[str, Any],
                  learned: Callable[[], TreeModel | None] | None = None) -> dict[str, Any]:
    """Answer one request with Kagura's RecallResponse body; ``learned`` gives the
    learned-rank model, asked only when the search mode could use it."""
    started = time.perf_counter()
    request: RecallRequest = parse_request(raw)
    now = request.now or backend.now()
    now_iso = format_timestamp(now)
    scope: SearchScope = resolve_scope(backend, request.filters)
    reason, model = learned_model(backend, request.search_mode, learned)
    outcome = run_search(backend, request.query, request.search_mode, scope, request.k,
                         adapter=model.query_adapter if model is not None else None,
                         delta=model.query_delta if model is not None else None)
    learned_report = add_learned(backend, request.query, request.search_mode, outcome, reason, model, now)
    folding = fold(backend, outcome.candidates, scope, now_iso, request.include_superseded)

    entries = folding.entries
    texts = [e.memory["content"] for e in entries]
    entries, rerank_report, rerank_scores = rerank(backend, request.query, entries, texts,
                                                   request.use_rerank, request.k)
    entries, rerank_scores = entries[:request.k], rerank_scores[:request.k]

    # One row per entry, then (include_superseded) its folded older versions.
    groups: list[list[tuple[Candidate, dict[str, Any]]]] = []
    for entry, rerank_score in zip(entries, rerank_scores, strict=True):
        head = memory_response(entry.head, entry.score, folded=entry.standalone_superseded)
        head["score_components"] = entry.head.components()
        if entry.via is not None:  # an older version's match put (or lifted) the head here
            head["score_components"]["via_version"] = entry.via
        if rerank_score is not None:
            head["rerank_score"] = round(rerank_score, 6)
        group = [(entry.head, head)]
        if request.include_superseded:
            for old in entry.folded:
                row = memory_response(old, old.score, folded=True)
                row["score_components"] = old.components()
                group.append((old, row))
        groups.append(group)
    ids = [row["memory_id"] for group in groups for _, row in group]
    version_of = versions(backend, ids)
    rows: list[tuple[Candidate, dict[str, Any]]] = []
    for group in groups:
        for _, row in group:
            row["version"] = version_of.get(row["memory_id"], 1)
            if row["folded"]:
                successor = folding.successors.get(row["memory_id"])
                if successor is not None and (scope.contexts is None or successor[1] in scope.contexts):
                    row["superseded_by"] = successor[0]
        rows.append(group[0])
        rows.extend(sorted(group[1:], key=lambda item: -item[1]["version"]))

    contradicting = contradictions(backend, scope, ids)
    current = [c for c, row in rows if not row["folded"]]
    duplicates = near_duplicates(backend, current, outcome, scope, now_iso)
    finder = SpanFinder(backend, request.query)
    for position, (candidate, row) in enumerate(rows):
        row["contradicts"] = contradicting.get(row["memory_id"], [])
        row["supersede_candidate"] = duplicates.get(row["memory_id"])
        row.update(content_fields(candidate.memory["content"], position < request.full))
        row["spans"] = finder.spans(candidate.memory["content"])

    _attach_relevance(backend, request.query, outcome, rows)
    results = [row for _, row in rows]
    response: dict[str, Any] = {
        "results": results,
        "related_tags": related_tags(backend, scope, [c.memory for c, _ in rows], now_iso),
        "explore_hints": (explore_hints(backend, scope, [r["memory_id"] for r in results
                                                       if not r["folded"]], now_iso)
                          if request.include_explore_hints else None),
        "tag_suggestions": tag_suggestions(backend, scope),
        "confidence": with_relevance(_confidence(outcome, folding.dropped, len(results), backend, entries),
                                     [r for r in results if not r["folded"]], backend.config, follow=False),
    }
    if outcome.degraded_reason is not None:
        response["degraded"] = True
        response["degraded_reason"] = outcome.degraded_reason
    response["selector"] = dict(SELECTOR)
    response["rerank"] = rerank_report
    response["learned_rank"] = learned_report
    response["search_mode"] = request.search_mode
    if request.filters.notes:
        response["warnings"] = list(request.filters.notes)
    response["query_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
    backend.touch([r["memory_id"] for r in results if not r["folded"]], now)
    return response

