"""The learned-rank component in the hybrid merge (recall/learned_rank.py).

recall's tree model reads each candidate's evidence against its pool. The
hybrid search has the same evidence under other names: its MaxSim (mapped
to [0, 1] as recall's vector component is), its keyword score (BM25 over the
request's best), its raw cosine and token matches, and its thread; the
model's query adapter moves the query tokens the hybrid's MaxSim reads, so
the model is decided before the search. Measured held out on the LoCoMo dev
conversations (each ranked by an adapter and trees trained on the other
four's recall pools), hybrid R@10 0.787 → 0.809.

The component joins the score as a weighted mean,
``(hybrid + w · learned) / (1 + w)`` with ``w = SEARCH_WEIGHT_LEARNED``, so
``score`` stays in [0, 1] and orders the results as recall's sum does; the
model scores the LEARNED_TOP best by the hybrid mix, and the rest count a
component of 0. Only ``hybrid`` gets it: ``semantic`` and ``keyword``
promise one arm's order.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from ..recall.late_interaction import token_score
from ..recall.learned_rank import (TreeModel, any_in_period, learned_components, read_query_date, report,
                                   usable_model)
from .search import Candidate, SearchOutcome, rank

if TYPE_CHECKING:
    from ..storage.backend import Backend


def learned_model(backend: "Backend", mode: str, load: Callable[[], TreeModel | None] | None
                  ) -> tuple[str | None, TreeModel | None]:
    """(why the search gets no learned component or None, the model when it may), decided
    before the search: the model's query adapter and delta shape the query tokens its MaxSim reads."""
    if mode != "hybrid":
        return f"search_mode is {mode}; the model ranks the hybrid merge", None
    return usable_model(backend, load)


def _pool_row(candidate: Candidate) -> dict[str, Any]:
    """A candidate as recall's pool_features reads one."""
    match = candidate.token_match
    vector = token_score(match.max_sim) if match is not None else (candidate.cosine or 0.0)
    return {"memory": candidate.memory, "_pk": candidate.pk, "_similarity": candidate.cosine,
            "_token_match": match, "final_score": candidate.score,
            "score_components": {"vector": vector, "keyword": candidate.keyword, "tag": 0.0}}


def add_learned(backend: "Backend", query: str, mode: str, outcome: SearchOutcome,
                reason: str | None, model: TreeModel | None, now: datetime) -> dict[str, Any]:
    """Give the best hybrid candidates their learned component, re-rank, and report
    (``reason`` and ``model`` from learned_model; ``now`` reads the dates the query names)."""
    if mode == "hybrid" and not outcome.semantic_ran:
        reason, model = "no semantic search ran; the model reads MaxSim", None
    elif outcome.delta_failure is not None:
        reason, model = f"the model's query delta could not be applied: {outcome.delta_failure}", None
    if model is None:
        return report(reason, 0)
    found = [c for c in outcome.candidates if c.found]
    mention = read_query_date(backend.config, query, now)
    rows = [_pool_row(c) for c in found]
    dates = [mention.describe()] if mention is not None else []
    if mention is not None and mention.relative and not any_in_period(mention, rows):
        # As recall does: a period read against the clock that holds no candidate changes nothing.
        dates = [{**dates[0], "ignored": "no candidate falls in this period"}]
        mention = None
    learned = learned_components(model, rows, query, mention)
    weight = backend.config.weight_learned
    for index, candidate in enumerate(found):
        # Candidates the model did not score count a learned component of 0, so the
        # order is the hybrid mix plus the weighted component, as in recall.
        value = learned.get(index)
        candidate.learned = value
        candidate.score = (candidate.score + weight * (value or 0.0)) / (1.0 + weight)
    rank(outcome.candidates)
    return report(None, len(learned), dates)
