"""``contradicts`` (CONTRADICTS edges) and ``supersede_candidate`` (near-duplicates).

``supersede_candidate`` is computed at recall time, never stored and never
applied: for each current result, the most similar *other* current memory
of the same context whose cosine to it is at least
``Config.v1_near_duplicate`` (0.95; ``LOCALMEM_V1_NEAR_DUPLICATE``) and
that is not already linked to it by a supersession edge. It reads
``{"memory_id", "similarity", "old_id", "new_id"}``: the agent may call
``supersede(old_id, new_id)`` if the two say the same thing.

Finding the neighbour is cheap in the common case: on the unit sphere a
memory within angle δ = acos(threshold) of a result r lies within
angle(q, r) + δ of the query q, so when that bound is inside the semantic
arm's kNN radius (and only contexts narrow the search) the neighbour is
already in the candidate pool and one pairwise-cosine query over the pool
settles it. Otherwise (tag/type/scope filters, keyword-only search, a
result far from the query) each of the top ``EXACT_ROWS`` (5) such results
is also compared with the 50 memories of its context that share at least two
of its 3 rarest words, best bm25 over those words first (an FTS5 index lookup
rather than a pass over every vector: a near-duplicate at cosine ≥ 0.95 shares
its wording; the pairs of words intersect short doclists, where ranking every
memory holding any of 6 words read tens of thousands of postings on a large
store; a memory with one known word looks for that word). Results further down
are compared with the candidate pool only. Either way a near-duplicate can
go unreported, never a false one: every reported pair has its cosine
checked.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
from typing import TYPE_CHECKING, Any

import apsw

from ..recall.keywords import bm25_weights_sql, document_frequency, match_expression, query_terms
from ..recall.scoring import usable_cosine
from ..storage.backend import remembered
from ..storage.records import rows_as_dicts, to_record
from ..recall.state import state_reason
from .folding import direct_successors
from .scope import SearchScope
from .search import Candidate, SearchOutcome

if TYPE_CHECKING:
    from ..storage.backend import Backend

logger = logging.getLogger("localmem.kagura")

# Results looked up by their words when the pool cannot vouch for them.
EXACT_ROWS = 5
RARE_WORDS = 3          # the result's rarest words: memories holding two of them are looked at
WORD_NEIGHBOURS = 50    # memories sharing most of them, compared by cosine


def _rare_words(backend: "Backend", content: str) -> list[str]:
    """The words of ``content`` that the fewest memories contain (at most RARE_WORDS):
    words of one stem, counted as recall's keyword channel counts them (kept per word)."""
    cache = backend.content_cache()
    frequency: dict[str, int] = {}
    for word in query_terms(content):
        if word not in frequency and len(backend.query_tokens(word)) == 1:
            frequency[word] = document_frequency(backend, word, cache)
    known = [w for w, n in frequency.items() if n]
    known.sort(key=lambda w: (frequency[w], w))
    return known[:RARE_WORDS]


def _pairs_expression(words: list[str]) -> str | None:
    """An FTS5 MATCH string for memories holding at least two of ``words`` (the one word
    when there is only one). Each word is in as many pairs as the others, so bm25 over it
    orders the memories as bm25 over the words OR-ed would."""
    if len(words) < 2:
        return match_expression(words)
    quoted = [match_expression([word]) for word in words]
    return " OR ".join(f"({a} AND {b})" for a, b in itertools.combinations(quoted, 2))


# The index-only ranking asks for this many hits beyond WORD_NEIGHBOURS (the memory
# itself, other contexts, archived ones), then falls back to the scoped statement.
WORD_HITS_MARGIN = 14


def _word_neighbours(backend: "Backend", r: Candidate, threshold: float, statement: str
                     ) -> tuple[tuple[int, float], ...]:
    """kagura_near_duplicates.sql's answer for ``r``: (pk, cosine) of the WORD_NEIGHBOURS
    memories of its context sharing most of its rarest words, kept at cosine ≥ ``threshold``.
    Ranked from the index alone (no memories row read per hit: most of the statement's
    cost on a large store), checked on the hits; the statement answers when fewer than
    WORD_NEIGHBOURS of them pass and more hits exist."""
    match = _pairs_expression(_rare_words(backend, r.memory["content"]))
    if match is None:
        return ()
    context = r.memory["context"]
    wide = WORD_NEIGHBOURS + WORD_HITS_MARGIN
    weights = bm25_weights_sql((1.0,) + (0.0,) * (len(backend.config.keyword_column_weights) - 1))
    hits = [pk for (pk,) in backend.conn.execute(
        backend.sql["kagura_near_duplicate_hits"].format(weights=weights), {"match": match, "k": wide})]
    admitted = []
    for pk, passes, similarity in backend.conn.execute(backend.sql["kagura_near_duplicate_checks"], {
            "pks": json.dumps(hits), "context": context, "pk": r.pk}):
        if passes:
            admitted.append((pk, similarity))
    if len(admitted) < WORD_NEIGHBOURS and len(hits) == wide:
        admitted = list(backend.conn.execute(statement, {
            "match": match, "context": context, "pk": r.pk, "k": WORD_NEIGHBOURS, "threshold": threshold}))
    return tuple((pk, cosine) for pk, similarity in admitted[:WORD_NEIGHBOURS]
                 if (cosine := usable_cosine(similarity)) is not None and similarity >= threshold)


def contradictions(backend: "Backend", scope: SearchScope, ids: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if not ids:
        return out
    for source, other in backend.conn.execute(backend.sql["kagura_contradicts"], {
            "ids": json.dumps(ids), "contexts": scope.contexts_json}):
        listed = out.setdefault(source, [])
        if other not in listed:
            listed.append(other)
    return out


def _in_pool(candidate: Candidate, outcome: SearchOutcome, scope: SearchScope, threshold: float) -> bool:
    """Whether every near-duplicate of ``candidate`` is certainly in the semantic pool."""
    if not outcome.semantic_ran or not scope.context_only or candidate.cosine is None:
        return False
    if outcome.knn_cutoff is None:
        return True
    angle = math.acos(max(-1.0, min(1.0, candidate.cosine))) + math.acos(max(-1.0, min(1.0, threshold)))
    bound = math.cos(angle) if angle < math.pi else -1.0
    return bound > outcome.knn_cutoff + 1e-6


def near_duplicates(backend: "Backend", results: list[Candidate], outcome: SearchOutcome,
                    scope: SearchScope, now_iso: str) -> dict[str, dict[str, Any]]:
    """``supersede_candidate`` by result id, for current results that have one."""
    if not backend.has_vector_index or not results or outcome.degraded_reason == "vector_search_unavailable":
        return {}
    try:
        return _near_duplicates(backend, results, outcome, scope, now_iso)
    except apsw.Error:
        logger.exception("Near-duplicate detection failed; no supersede_candidate this time")
        return {}


def _near_duplicates(backend: "Backend", results: list[Candidate], outcome: SearchOutcome,
                     scope: SearchScope, now_iso: str) -> dict[str, dict[str, Any]]:
    threshold = float(backend.config.v1_near_duplicate)
    results = [r for r in results if r.pk >= 0]
    pairs: dict[int, list[tuple[int, float]]] = {}
    pool = [c.pk for c in outcome.semantic_pool]
    if len(pool) > 1:  # every result against the pool: one cheap query
        for left, right, similarity in backend.conn.execute(backend.sql["kagura_pair_similarity"], {
                "left": json.dumps([r.pk for r in results]), "right": json.dumps(pool),
                "threshold": threshold}):
            if (cosine := usable_cosine(similarity)) is not None:  # a damaged vector is no duplicate
                pairs.setdefault(left, []).append((right, cosine))
    # The top results the pool cannot vouch for: their context's memories that
    # share most of their rarest words.
    exact = [r for r in results if not _in_pool(r, outcome, scope, threshold)][:EXACT_ROWS]
    if exact:
        statement = backend.sql["kagura_near_duplicates"].format(weights=bm25_weights_sql(
            (1.0,) + (0.0,) * (len(backend.config.keyword_column_weights) - 1)))
        known = {(left, right) for left, found in pairs.items() for right, _ in found}
        cache = backend.content_cache()
        for r in exact:
            found = remembered(cache, ("kagura_word_neighbours", r.pk, threshold),
                               lambda r=r: _word_neighbours(backend, r, threshold, statement))
            for right, cosine in found:
                if (r.pk, right) not in known:
                    pairs.setdefault(r.pk, []).append((right, cosine))
    if not pairs:
        return {}
    other_pks = sorted({pk for found in pairs.values() for pk, _ in found})
    others = {row["pk"]: to_record(row) for row in rows_as_dicts(backend.conn.execute(
        backend.sql["kagura_memories_by_pks"], {"pks": json.dumps(other_pks)}))}
    superseded = direct_successors(backend, [m["id"] for m in others.values()])
    everyone = sorted(set(other_pks) | set(pairs))
    linked = {frozenset(pair) for pair in backend.conn.execute(
        backend.sql["kagura_supersession_links"], {"pks": json.dumps(everyone)})}
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        best: tuple[float, dict[str, Any]] | None = None
        for pk, similarity in pairs.get(r.pk, []):
            other = others.get(pk)
            if (other is None or other["context"] != r.memory["context"]
                    or other["id"] in superseded or state_reason(other, now_iso) is not None
                    or frozenset((r.pk, pk)) in linked):
                continue
            if best is None or similarity > best[0]:
                best = (similarity, other)
        if best is None:
            continue
        similarity, other = best
        mine = r.memory
        older, newer = sorted((mine, other), key=lambda m: (m.get("timestamp") or "", m["id"]))
        out[mine["id"]] = {"memory_id": other["id"], "similarity": round(min(1.0, similarity), 4),
                           "old_id": older["id"], "new_id": newer["id"]}
    return out
