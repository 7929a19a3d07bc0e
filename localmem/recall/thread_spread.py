"""Spread a gathering question's first results across threads.

A question that gathers ("how many times did I bake…", "the order of the concerts I
went to…") needs facts said in passing in as many sessions, while one session that talks
about the subject at length can fill the first results on its own. For such a question
at most PER_THREAD memories of one thread (storage/threads.py) stay in the first
SPREAD_TOP results, unless the best candidate of another thread scores more than
SCORE_GAP below: then the crowded thread's candidate keeps its place. A memory moved down
has its score lowered just under the one now above it, and the amount is its
``thread_spread`` score component (negative), so the answer stays sorted by score.

Measured held out on both dev sets (docs/quality.md): applied to every question, the cap
lowers LoCoMo, whose questions are mostly about one session; applied to gathering
questions only, it lifts LongMemEval and leaves LoCoMo as it was. It applies only when
the learned ranking ranks the recall (sorted by score): on the weighted score alone it
lowered LongMemEval. The words are ones that ask to gather on any store, not a data set's
phrasing.
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..storage.threads import thread_key

# Words that ask to gather facts from many places: counting, totals, ordering, and a
# period looked back over. Read case-insensitively, as whole words.
GATHERING_WORDS = (
    "how many", "how much", "how often", "in total", "total", "altogether", "combined",
    "in what order", "what order", "the order", "order of", "each time", "every time",
    "all the", "each of", "times did", "times have",
)
_LOOKED_BACK = r"(?:in|over|during|within) the (?:past|last) (?:\w+ )?(?:days?|weeks?|months?|years?)"
GATHERING = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in GATHERING_WORDS) + "|" + _LOOKED_BACK + r")\b",
                       re.IGNORECASE)
# Longest question text read for the words (a longer one is read up to here).
MAX_QUERY_CHARS = 4000

PER_THREAD = 2
SPREAD_TOP = 10
# In final-score units: a crowded thread's candidate gives way only to another thread's
# best candidate scoring at most this much lower.
SCORE_GAP = 0.3


def gathers(query: str) -> bool:
    """Whether ``query`` asks to gather facts from many places (GATHERING_WORDS)."""
    return bool(query) and GATHERING.search(query[:MAX_QUERY_CHARS]) is not None


def _thread_of(candidate: dict[str, Any], index: int) -> str:
    memory = candidate["memory"]
    metadata = memory.get("metadata")
    tags = memory.get("tags")
    key = thread_key(memory.get("context") or "default", metadata if isinstance(metadata, dict) else {},
                     [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [])
    return key if key is not None else f"\x00{index}"  # a memory without a thread is its own


def spread_order(scores: list[float], threads: list[str], per_thread: int = PER_THREAD,
                 gap: float = SCORE_GAP) -> list[int]:
    """The order of candidates (``scores`` sorted from high to low, each one's thread) with at
    most ``per_thread`` of one thread in the first SPREAD_TOP unless another thread's best
    scores more than ``gap`` lower (see the module's docstring; the defaults are recall's).
    Work: SPREAD_TOP passes over the list at most."""
    remaining = list(range(len(scores)))
    chosen: list[int] = []
    counts: dict[str, int] = {}
    while remaining and len(chosen) < SPREAD_TOP:
        pick = 0
        best = remaining[0]
        if counts.get(threads[best], 0) >= per_thread:
            floor = scores[best] - gap
            for place, index in enumerate(remaining[1:], start=1):
                if scores[index] < floor:
                    break
                if counts.get(threads[index], 0) < per_thread:
                    pick = place
                    break
        index = remaining.pop(pick)
        chosen.append(index)
        counts[threads[index]] = counts.get(threads[index], 0) + 1
    return chosen + remaining


def candidate_threads(ranked: list[dict[str, Any]]) -> list[str]:
    """Each candidate's thread; a memory without one is its own."""
    return [_thread_of(c, i) for i, c in enumerate(ranked)]


def spread_threads(ranked: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """``ranked`` (sorted by score) reordered by spread_order, and how many memories were moved
    down: their scores are lowered just under the one now above each, so the list stays sorted
    by score."""
    if len(ranked) <= PER_THREAD:
        return ranked, 0
    order = spread_order([float(c["final_score"]) for c in ranked], candidate_threads(ranked))
    if order == list(range(len(order))):
        return ranked, 0
    above = math.inf
    moved = 0
    out = [ranked[i] for i in order]
    for candidate in out:
        score = float(candidate["final_score"])
        if score > above:  # (ties are left as they are: the sort keeps their order)
            lowered = math.nextafter(above, -math.inf)
            candidate.setdefault("score_components", {})["thread_spread"] = lowered - score
            candidate["final_score"] = candidate["score"] = lowered
            score = lowered
            moved += 1
        above = score
    return out, moved
