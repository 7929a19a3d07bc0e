"""The recall pipeline, in AutoMem's order:

per query: channels → score → min_score → dedup → sort → cut;
then: merge queries → seeds → relation expansion → entity expansion →
current-state filter → recency bias → adaptive floor / min_score →
scope fallback → relation hydration → response → last_accessed.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from ..text import extract_keywords
from ..timegrammar.mentions import CalendarMention
from ..timeparse import format_timestamp
from .channels import (
    dated_scope,
    keyword_candidates,
    metadata_candidates,
    priority_candidates,
    Scope,
    make_scope,
    trending_candidates,
    vector_candidates,
)
from .context import ContextProfile, build_context_profile, needs_injection
from .decompose import decompose_query
from .keywords import KeywordScorer
from .answer import recall_response, state_filter_block
from .centering import Centre, centred_similarities, usable_centre
from .late_interaction import QueryAdapter, token_matches_soon
from .learned_rank import TreeModel, learned_components, read_query_date, usable_model
from .scoped_keywords import ScopedKeywords, read_ahead, scoped_statistics
from .entities import expand_entities
from .expansion import expand_relations, hydrate_relations
from .gating import apply_score_gates
from .params import RecallParams, parse_recall_params
from .query_vectors import QueryVectors
from .ranking import apply_recency_bias, dedupe, priority_first, sort_results
from .prompt_signals import prompt_inputs
from .relevance import Evidence, attach_relevance, recall_confidence, with_relevance
from .scope import passes_scope
from .scoring import (CandidateScorer, lowered_tags_of_text, metadata_terms_of_text, parse_epoch,
                      usable_cosine)
from .state import SupersessionHeads, apply_state_filter, state_reason
from .thread_spread import gathers, spread_threads

if TYPE_CHECKING:
    from ..embedders.query_delta import QueryDelta
    from ..storage.backend import Backend

# The most candidates a channel is asked for when re-asking for more (sqlite-vec's largest k).
MAX_FETCH = 4096
# Candidates the channel of a date the query names adds (the best by vector among that day's,
# month's or year's memories): a day of conversation is a few dozen turns.
DATED_FETCH = 20
# Candidates whose token codes are matched on another thread (fewer: on this one).
ASIDE_MATCHES = 16


class Recall:
    """One recall request against one store."""

    def __init__(self, backend: "Backend", params: RecallParams,
                 learned: Callable[[], TreeModel | None] | None = None) -> None:
        self.backend = backend
        self.config = backend.config
        self.params = params
        self.now: datetime = params.now  # type: ignore[assignment]
        self.vectors = QueryVectors(backend, params.embedding, self.tuned_delta)
        self.vector_found: dict[str, int] = {}  # vector candidates per query
        self.token_scored = 0  # candidates whose vector component came from token codes
        # Reads the learned-rank model (recall/learned_rank.py), only once it could be used.
        self.learned_loader = learned
        self.learned_ranked = 0  # candidates that got a learned component
        self.spread_moved = 0  # candidates recall/thread_spread.py moved down
        self.query_dates: dict[str, CalendarMention | None] = {}  # the date each query names
        self.dated_found: dict[str, int] = {}  # candidates only the named date's channel found
        self.dates_ignored: dict[str, CalendarMention] = {}  # relative periods no memory in scope falls in
        self.profiles: dict[str, ContextProfile | None] = {}
        self.keyword_scorers: dict[str, KeywordScorer] = {}
        self.scopes: dict[str, Scope] = {}  # each query's scope, for keyword statistics
        self.scoped_keywords: dict[str, ScopedKeywords | None] = {}
        self.query_tokens: dict[str, list[str]] = {}  # extract_keywords per query, for every candidate
        self.candidate_scorers: dict[str, CandidateScorer] = {}  # per query, for every candidate
        self.context_injected = False
        self.hidden: dict[str, dict[str, Any]] = {}  # not-current memories kept out of the answer
        self.below_min_score: set[str] = set()  # candidates min_score removed before the answer's gate
        self.evidence = Evidence()  # for the confidence block
        self.heads = SupersessionHeads(backend, format_timestamp(self.now))  # supersession, asked once per memory

    @property
    def vector_pool(self) -> int:
        return sum(self.vector_found.values())

    def profile(self, query: str) -> ContextProfile | None:
        """The context profile for one query (language detection looks at the query too)."""
        if query not in self.profiles:
            p = self.params
            self.profiles[query] = build_context_profile(
                query=query, context=p.context, language=p.language, active_path=p.active_path,
                context_tags=p.context_tags, context_types=p.context_types,
                priority_ids=p.priority_ids)
        return self.profiles[query]

    # -- scoring ----------------------------------------------------------

    def fill_similarity(self, results: list[dict[str, Any]], query: str) -> None:
        """Cosine to the query for results no vector search scored (one query)."""
        query_vector = self.vectors.for_query(query)
        missing = [r for r in results if r.get("_similarity") is None]
        if query_vector is None or not missing:
            return
        rows = self.backend.conn.execute(self.backend.sql["recall_similarity"], {
            "ids": json.dumps([r["id"] for r in missing]), "query_vector": query_vector})
        similarity = {row[0]: usable_cosine(row[1]) for row in rows}
        for result in missing:
            if similarity.get(result["id"]) is not None:
                result["_similarity"] = similarity[result["id"]]

    def fill_centred(self, results: list[dict[str, Any]], query: str) -> None:
        """Centred cosines (from the store's mean direction) for results that have a cosine."""
        if not self.config.vector_centering:
            return
        query_vector = self.vectors.for_query(query)
        missing = [r for r in results if "_centred" not in r and r.get("_similarity") is not None]
        if query_vector is None or not missing:
            return
        centred = centred_similarities(self.backend, missing, query_vector, self.centre)
        for result in missing:
            result["_centred"] = centred.get(result["id"])

    @functools.cached_property
    def centre(self) -> Centre | None:
        """The store's mean vector for centred cosines (None: centring is off or not yet
        measured), read once per recall: its channels read each candidate's cosine to it."""
        return usable_centre(self.backend) if self.config.vector_centering else None

    def centre_for(self, query_vector: bytes | None) -> bytes | None:
        """The centre the channels read cosines to, when there is a query vector to centre."""
        return self.centre.blob if query_vector is not None and self.centre is not None else None

    def fill_tokens(self, results: list[dict[str, Any]], query: str) -> Callable[[], None]:
        """Late-interaction MaxSim for results that have token codes (recall/late_interaction.py),
        read now and filled in by the function returned; a pool's codes are matched on
        another thread until then."""
        missing = [r for r in results if "_token" not in r]
        query_tokens = self.maxsim_tokens(query) if missing else None
        if query_tokens is None:
            return lambda: None
        matching = token_matches_soon(self.backend, missing, query_tokens, self.query_adapter(),
                                      aside=len(missing) >= ASIDE_MATCHES)

        def fill() -> None:
            found = matching()
            for result in missing:
                match = found.get(result["id"])
                result["_token"] = match.max_sim if match is not None else None
                result["_token_match"] = match
            self.token_scored += len(found)
        return fill

    def scoped_keyword(self, query: str) -> ScopedKeywords | None:
        """Keyword statistics of the query's scope, when it is narrowed and the lever is on."""
        if query not in self.scoped_keywords:
            scope = self.scopes.get(query)
            useful = scope is not None and scoped_statistics(self.backend, scope)
            self.scoped_keywords[query] = (ScopedKeywords(self.backend, scope, self.keyword_scorer(query))
                                           if useful else None)
        return self.scoped_keywords[query]

    def keyword_scorer(self, query: str) -> KeywordScorer:
        if query not in self.keyword_scorers:
            self.keyword_scorers[query] = KeywordScorer(
                self.backend, query, with_vectors=self.vectors.for_query(query) is not None)
        return self.keyword_scorers[query]

    def fill_keyword(self, results: list[dict[str, Any]], query: str) -> None:
        """Keyword scores (BM25 with thread context, normalised) for results that have none."""
        missing = [r for r in results if "_keyword" not in r]
        if not missing:
            return
        scores = self.keyword_scorer(query).scores(missing)
        scoped = self.scoped_keyword(query)
        if scoped is not None:
            narrowed = scoped.scores(missing)
            scores.update({c["id"]: narrowed.get(c["id"], 0.0) for c in missing if "_pk" in c})
        for result in missing:
            result["_keyword"] = scores.get(result["id"], 0.0)
            if result["match_type"] == "keyword":
                result["match_score"] = result["_keyword"]

    def prepare(self, results: list[dict[str, Any]], query: str,
                beside: Callable[[], Any] | None = None) -> None:
        """Fill the evidence every candidate gets: cosines, token matches and keyword scores.
        The token codes are matched on another thread while the rest is read, and ``beside``
        (more reading the caller needs later) runs then too."""
        filled = self.fill_tokens(results, query)
        self.fill_similarity(results, query)
        self.fill_centred(results, query)
        self.fill_keyword(results, query)
        if beside is not None:
            beside()
        filled()

    def score(self, result: dict[str, Any], query: str) -> None:
        """Set final_score, score, original_score and score_components of one result."""
        scorer = self.candidate_scorers.get(query)
        if scorer is None:
            tokens = self.query_tokens.get(query)
            if tokens is None:
                tokens = self.query_tokens[query] = extract_keywords(query.lower())
            scorer = self.candidate_scorers[query] = CandidateScorer(query, tokens, self.now, self.config,
                                                                     self.profile(query))
        meta_terms = lowered_tags = None
        texts = result.get("_texts")
        if texts is not None:
            tags_text, metadata_text = texts
            if isinstance(metadata_text, str) or metadata_text is None:
                meta_terms = metadata_terms_of_text(metadata_text or "")
            if isinstance(tags_text, str) or tags_text is None:
                lowered_tags = lowered_tags_of_text(tags_text or "")
        final, components = scorer.score(
            result["match_type"], float(result.get("match_score") or 0.0), result.get("_similarity"),
            result.get("relation_score"), result.get("_metadata_score", 0.0), result["memory"],
            result.get("_keyword", 0.0), result.get("_centred"), result.get("_token"),
            meta_terms, lowered_tags)
        bonus = result.get("_entity_bonus")
        if bonus:
            final += bonus
            components["entity_expansion"] = bonus
        result["final_score"] = final
        result["score"] = final
        result.setdefault("original_score", result.get("match_score", 0.0))
        result["score_components"] = components
        result["_query"] = query

    @functools.cached_property
    def learned_decision(self) -> tuple[str | None, TreeModel | None]:
        """(why this recall's candidates get no learned component, or None; the model when
        they do), decided once per recall; the model is read only when nothing else rules it out."""
        if self.params.sort != "score":
            return f"results are sorted by {self.params.sort}", None
        if self.params.embedding is not None:
            return "an explicit query embedding has no token vectors", None
        return usable_model(self.backend, self.learned_loader)

    def tuned_delta(self) -> QueryDelta | None:
        """The learned model's query delta when the model ranks this recall."""
        model = self.learned_decision[1]
        return model.query_delta if model is not None else None

    def maxsim_tokens(self, query: str) -> Any:
        """The query's token vectors for MaxSim: with the learned model's query delta
        applied when the model ranks this recall and has one (its trees read the MaxSim
        they give), else the plain ones; both come from the pass that gave the query's
        vector. A delta the embedder cannot apply takes the model out of this recall,
        saying why."""
        found = self.vectors.encoding(query)
        plain = self.vectors.tokens_for(query)
        model = self.learned_decision[1]
        if found is None or plain is None or model is None or model.query_delta is None:
            return plain
        if found.tuned is None:
            why = found.tuned_error or "the embedder gave no tuned token vectors"
            self.learned_decision = (f"the model's query delta could not be applied: {why}", None)
            return plain
        return found.tuned

    def query_adapter(self) -> QueryAdapter | None:
        """The learned model's query adapter, when the model ranks this recall: its trees
        read the MaxSim the adapter gives."""
        model = self.learned_decision[1]
        return model.query_adapter if model is not None else None

    def add_learned(self, candidates: list[dict[str, Any]], query: str) -> None:
        """Add the learned-rank component to the scored candidates of one query."""
        if not query or not candidates:
            return
        model = self.learned_decision[1]
        if model is None:
            return
        weight = self.config.weight_learned
        learned = learned_components(model, candidates, query, self.query_date(query))
        for index, value in learned.items():
            candidate = candidates[index]
            candidate["score_components"]["learned"] = value
            candidate["final_score"] += weight * value
            candidate["score"] = candidate["final_score"]
        self.learned_ranked += len(learned)

    def query_date(self, query: str) -> CalendarMention | None:
        """The calendar date ``query`` names (learned_rank.read_query_date), read once."""
        if query not in self.query_dates:
            self.query_dates[query] = read_query_date(self.config, query, self.now)
        return self.query_dates[query]

    def dated_candidates(self, query: str, query_vector: bytes | None) -> list[dict[str, Any]]:
        """The memories nearest the query among those of the date it names, year and all,
        when the learned model ranks (it reads each candidate's distance from that date):
        the other channels rank the whole scope and can miss that day's few memories."""
        if not query or query_vector is None or self.learned_decision[1] is None:
            return []
        mention = self.query_date(query)
        if mention is None or not mention.has_year:
            return []
        scope = dated_scope(self.params, mention.start, mention.end, self.config.excluded_types)
        found = vector_candidates(self.backend, scope, query_vector, DATED_FETCH) if scope is not None else []
        if mention.relative and not found:
            # Read against the request's clock, a period holding none of the scope's memories is
            # about no memory here (a question asked long after them): it changes nothing.
            self.query_dates[query] = None
            self.dates_ignored[query] = mention
        return found

    def dates_read(self) -> list[dict[str, Any]]:
        """What the answer says of the dates the model read: each, and the candidates it added;
        and the relative periods it did not read, saying why."""
        return [{**mention.describe(), "added_candidates": self.dated_found.get(query, 0)}
                for query, mention in self.query_dates.items() if mention is not None] + [
            {**mention.describe(), "added_candidates": 0, "ignored": "no memory in scope falls in this period"}
            for mention in self.dates_ignored.values()]

    def scorer(self, query: str):
        def score(result: dict[str, Any]) -> None:
            self.prepare([result], query)
            self.score(result, query)
        return score

    # -- one query --------------------------------------------------------

    def vector_fetch_size(self, limit: int, has_text: bool) -> int:
        """AutoMem's over-fetch: more vector candidates than asked for, so re-ranking has room.

        AutoMem widens tag-scoped searches to RECALL_MAX_LIMIT because Qdrant
        filters after its search; localmem searches within the scope
        (channels._vector_rows), so the plain over-fetch is enough.
        """
        config = self.config
        return max(limit, min(limit * config.vector_overfetch, config.vector_fetch_cap))

    def run_query(self, query: str, limit: int) -> list[dict[str, Any]]:
        """Candidates for one query, scored, filtered, deduplicated, sorted and cut to ``limit``.

        Every filter runs before the cut, the current-state filter included,
        so ``limit`` results come back whenever the channels can find that
        many current memories. When hidden memories leave a full page short,
        the channels are asked again for more (as many more as were hidden,
        and at least twice as many in all), up to MAX_FETCH.
        """
        fetch = self.vector_fetch_size(limit, bool(query) or self.params.embedding is not None)
        trending = limit
        while True:
            ranked, full = self.ranked_candidates(query, limit, fetch, trending)
            if not self.params.current_only:
                return priority_first(ranked, self.params.priority_ids, limit)
            kept, block = apply_state_filter(self.backend, ranked, self.now, True, self.in_scope, self.heads)
            cut = priority_first(kept, self.params.priority_ids, limit)
            hidden = len(block["suppressed"])
            if len(cut) >= limit or not full or not hidden:
                break
            wider = (min(MAX_FETCH, fetch + max(hidden, fetch)),
                     min(MAX_FETCH, trending + max(hidden, trending)))
            if wider == (fetch, trending):
                break
            fetch, trending = wider
        self.note_hidden(ranked, cut, block["suppressed"], limit)
        return cut

    def ranked_candidates(self, query: str, limit: int, fetch: int, trending: int
                          ) -> tuple[list[dict[str, Any]], bool]:
        """Every candidate of one query, scored and ranked; and whether a channel filled its page."""
        params, backend = self.params, self.backend
        scope = make_scope(params, self.config.excluded_types)
        self.scopes[query] = scope
        if self.vectors.start(query):  # while the model encodes the query on another thread,
            read_ahead(backend, scope, query)  # read what needs no query vector
            _ = self.centre, self.query_date(query)
        query_vector = self.vectors.for_query(query)
        candidates: list[dict[str, Any]] = []
        seen: set[str] = set()
        full = False

        def admit(found: list[dict[str, Any]], asked: int | None) -> None:
            """Add new candidates; ``asked``: the page a channel filled, if it may need a wider round."""
            nonlocal full
            full = full or (asked is not None and len(found) >= asked)
            for candidate in found:
                if candidate["id"] not in seen:
                    seen.add(candidate["id"])
                    candidates.append(candidate)

        if query_vector is not None:
            found = vector_candidates(backend, scope, query_vector, fetch, self.centre_for(query_vector))
            self.vector_found[query] = len(found)  # a second round replaces the first one's count
            admit(found, fetch)
        dated = [c for c in self.dated_candidates(query, query_vector) if c["id"] not in seen]
        self.dated_found[query] = len(dated)
        admit(dated, None)
        if query:
            asked = max(fetch, self.config.keyword_fetch)
            listed = [c["_pk"] for c in candidates if "_pk" in c]
            # Hits the vector channel found already come back as their ids alone: admit
            # passes over them either way, and their rows need not be read twice.
            admit(keyword_candidates(backend, scope, self.keyword_scorer(query), query_vector, asked,
                                     listed, self.centre_for(query_vector),
                                     {c["_pk"]: c["id"] for c in candidates if "_pk" in c}), asked)
        if not query and query_vector is None:
            admit(trending_candidates(backend, scope, trending), trending)
        if query and self.config.metadata_search_enabled:
            for candidate in metadata_candidates(backend, scope, query, limit, seen):
                seen.add(candidate["id"])
                candidates.append(candidate)  # upgrades of seen ids too; dedup keeps the better copy
        # Every candidate's supersession head in one walk, read while the token codes are
        # matched: the state filter asks about those that survive dedup, the confidence
        # block about the nearest of all.
        self.prepare(candidates, query, beside=(lambda: self.heads([c["id"] for c in candidates]))
                     if params.current_only else None)
        for candidate in candidates:
            self.score(candidate, query)
        self.add_learned(candidates, query)
        self.evidence.add(candidates)
        candidates = self.above_min_score(candidates)
        candidates, _ = dedupe(candidates)
        ranked = sort_results(candidates, params.sort)
        if self.config.thread_spread and self.learned_decision[1] is not None and gathers(query):
            ranked, moved = spread_threads(ranked)  # measured with the trees ranking: without them it costs
            self.spread_moved += moved
        profile = self.profile(query)
        if profile is not None and needs_injection(profile, ranked[:limit]):
            injected = self.inject_priority(profile, query, scope, ranked, limit)
            if injected:
                self.context_injected = True
                ranked = sort_results(ranked + injected, params.sort)
        return ranked, full

    def note_hidden(self, ranked: list[dict[str, Any]], cut: list[dict[str, Any]],
                    suppressed: list[dict[str, Any]], limit: int) -> None:
        """Remember the hidden memories that ranked inside the cut (what the answer would have held)."""
        position = {r["id"]: n for n, r in enumerate(ranked)}
        if len(cut) >= limit:
            last = max(position.get(r.get("state_replaces") or r["id"], -1) for r in cut)
            suppressed = [e for e in suppressed if position[e["id"]] <= last]
        for entry in suppressed:
            self.hidden.setdefault(entry["id"], entry)

    def inject_priority(self, profile: ContextProfile, query: str, scope: Scope,
                        present: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
        """Memories the context asks for that the search missed: listed ids, then priority tags."""
        seen = {r["id"] for r in present}
        found = priority_candidates(self.backend, scope, [i for i in profile.priority_ids if i not in seen])
        if profile.priority_tags:
            tagged = replace(self.params, tags=sorted(profile.priority_tags), tag_mode="any",
                             tag_match="prefix")
            tag_scope = make_scope(tagged, self.config.excluded_types)
            for candidate in trending_candidates(self.backend, tag_scope, max(1, min(limit, 3))):
                if self.in_scope(candidate["memory"]):
                    found.append(candidate)
        out: list[dict[str, Any]] = []
        for candidate in found:
            if candidate["id"] in seen:
                continue
            seen.add(candidate["id"])
            out.append(candidate)
        self.prepare(out, query)
        for candidate in out:
            self.score(candidate, query)
        return out

    # -- later stages -----------------------------------------------------

    def in_scope(self, memory: dict[str, Any]) -> bool:
        return passes_scope(memory, self.params, self.config.excluded_types)

    def above_min_score(self, candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The candidates min_score keeps; the others are noted for the answer's score_filter."""
        floor = self.params.min_score
        if floor <= 0:
            return candidates
        self.below_min_score.update(c["id"] for c in candidates if c["final_score"] < floor)
        return [c for c in candidates if c["final_score"] >= floor]

    def scope_fallback(self, results: list[dict[str, Any]], seen: set[str]) -> list[dict[str, Any]]:
        """Fill a short tag-scoped answer from an unscoped vector search, marked outside_tag_scope."""
        params = self.params
        query = params.query or (params.queries[0] if params.queries else "")
        query_vector = self.vectors.for_query(query)
        free = params.limit - len(results)
        if query_vector is None or free <= 0:
            return []
        unscoped = replace(params, tags=[])
        scope = make_scope(unscoped, self.config.excluded_types)
        found = vector_candidates(self.backend, scope,
                                  query_vector, min(params.limit * 2, self.config.max_limit))
        now_iso = format_timestamp(self.now)
        found = [c for c in found if c["id"] not in seen and not self.in_scope(c["memory"])
                 and (not params.current_only or state_reason(c["memory"], now_iso) is None)]
        if params.current_only:
            superseded = self.heads([c["id"] for c in found])
            found = [c for c in found if c["id"] not in superseded]
        self.prepare(found, query)
        for candidate in found:
            self.score(candidate, query)
            candidate["outside_tag_scope"] = True
        found = self.above_min_score(found)
        found.sort(key=lambda r: -r["final_score"])
        return found[:free]

    # -- the whole request ------------------------------------------------

    def run(self) -> dict[str, Any]:
        started = time.perf_counter()
        params = self.params
        if params.queries:
            queries = params.queries
        elif params.auto_decompose and params.query:
            queries = [params.query] + decompose_query(params.query)
        else:
            queries = [params.query]
        multi = len(queries) > 1 or bool(params.queries)
        per_query_limit = params.per_query_limit if multi else params.limit
        gathered: list[dict[str, Any]] = []
        for query in queries:
            gathered.extend(self.run_query(query, per_query_limit))
        merged, dedup_removed = dedupe(gathered)
        seeds = priority_first(sort_results(merged, params.sort), params.priority_ids, params.limit)
        seen = {r["id"] for r in seeds}
        primary_query = params.query or (params.queries[0] if params.queries else "")

        expansions: list[dict[str, Any]] = []
        if params.expand_relations:
            expansions = expand_relations(self.backend, params, seeds, seen, self.scorer(primary_query))
            seen.update(r["id"] for r in expansions)
        entity_results: list[dict[str, Any]] = []
        entity_names: list[str] = []
        if params.expand_entities:
            entity_results, entity_names = expand_entities(
                self.backend, params, seeds + expansions, seen, self.scorer(primary_query))
        results = seeds + expansions + entity_results

        state_filter = None
        if params.current_only:
            # The seeds passed the filter in run_query; the expansions meet it here.
            extra, block = apply_state_filter(self.backend, expansions + entity_results, self.now,
                                              True, self.in_scope, self.heads)
            for entry in block["suppressed"]:
                self.hidden.setdefault(entry["id"], entry)
            seed_ids = {r["id"] for r in seeds}  # a head already among the seeds is not added twice
            results = seeds + [r for r in extra if r["id"] not in seed_ids]
            state_filter = state_filter_block(self, results)
        recency_applied = apply_recency_bias(results, queries, params, self.config.weight_temporal)
        gated = {r["id"] for r in results} if params.min_score > 0 else set()  # for the count below
        results, score_filter = apply_score_gates(
            results, sort=params.sort, use_adaptive=params.adaptive_floor, min_score=params.min_score)
        fallback_active = (params.scope_fallback and bool(params.tags) and self.vectors.available
                           and bool(primary_query or params.embedding is not None)
                           and len(results) < params.limit)
        if fallback_active:
            results = results + self.scope_fallback(results, seen | {r["id"] for r in results})
        if score_filter is not None and params.min_score > 0:
            # AutoMem's filtered_count counts only the last gate; min_score also dropped
            # candidates per query and among the fallback fills, and an empty answer should say so.
            # Counted once per memory, and not again when filtered_count counts it.
            score_filter["candidates_below_min_score"] = len(self.below_min_score - gated
                                                            - {r["id"] for r in results})
        hydrate_relations(self.backend, results)
        judged = bool(primary_query or params.embedding is not None or multi)
        if judged:  # a head moved into a superseded memory's place is judged on its own evidence
            for query in {r.get("_query") or primary_query for r in results if "state_replaces" in r}:
                self.prepare([r for r in results if "state_replaces" in r and "_similarity" not in r
                              and (r.get("_query") or primary_query) == query], query)
            attach_relevance(results, primary_query, lambda query: prompt_inputs(
                self.evidence.cosine.values(), self.keyword_scorer(query), self.scoped_keyword(query)))
        response = recall_response(self, results, queries if multi else None, dedup_removed,
                                   state_filter, score_filter, seeds, expansions, entity_results,
                                   entity_names, recency_applied, fallback_active)
        if judged:
            response["confidence"] = with_relevance(recall_confidence(
                self.backend, self.evidence, len(results), semantic=self.vectors.available,
                current_only=params.current_only, now=self.now, heads_of=self.heads),
                results, self.config)
        response["query_time_ms"] = round((time.perf_counter() - started) * 1000, 3)
        self.backend.touch([r["id"] for r in seeds], self.now)
        return response


def run_recall(backend: "Backend", raw: dict[str, Any],
               learned: Callable[[], TreeModel | None] | None = None) -> dict[str, Any]:
    """Answer one recall request with AutoMem's GET /recall response body; ``learned``
    gives the learned-rank model, asked only when the recall could use it."""
    params = parse_recall_params(raw, backend.config, backend.dimensions, backend.now())
    return Recall(backend, params, learned).run()
