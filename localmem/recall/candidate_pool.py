"""How many of the channels' finds a recall goes on to score.

Every candidate the channels find gets its evidence read (token codes, cosines, keyword
scores), a weighted score, a row of the learned stage's pool features and a place in the
confidence block's evidence, so a recall's cost grows with the pool
(benchmarks/speed/candidate_work.py). The keyword channel asks for as many hits as the vector
channel asks for memories, and at least ``keyword_fetch`` (``KEYWORD_PAGE`` None), or for
``KEYWORD_PAGE``; with ``FIRST_CUT`` set only that many candidates go on, the best by the
channels' own ranks fused (the vector channel's order, the keyword channel's order).
"""

from __future__ import annotations

from typing import Any

# The keyword channel's page (None: max(the vector channel's page, keyword_fetch)).
KEYWORD_PAGE: int | None = None
# Candidates that go on past the channels, the best by fused channel ranks (None: every one).
FIRST_CUT: int | None = None
# Reciprocal rank fusion's constant: 1 / (FUSION_K + rank) per channel that found a candidate.
FUSION_K = 60


def keyword_page(fetch: int, keyword_fetch: int, page: int | None) -> int:
    """The keyword channel's page: ``page`` when set, else the vector channel's and at least ``keyword_fetch``."""
    return max(fetch, keyword_fetch) if page is None else page


def fused_ranks(vector_finds: list[dict[str, Any]], keyword_hits: list[dict[str, Any]]) -> dict[str, float]:
    """Each channel find's 1/(FUSION_K + vector rank) + 1/(FUSION_K + keyword rank), ranks from 1
    in each channel's own order; a channel that did not find it adds 0."""
    fused: dict[str, float] = {}
    for finds in (vector_finds, keyword_hits):
        for rank, find in enumerate(finds, start=1):
            fused[find["id"]] = fused.get(find["id"], 0.0) + 1.0 / (FUSION_K + rank)
    return fused


def first_cut(candidates: list[dict[str, Any]], vector_finds: list[dict[str, Any]],
              keyword_hits: list[dict[str, Any]], keep: int | None,
              dated: list[dict[str, Any]] = ()) -> list[dict[str, Any]]:
    """The ``keep`` best of the two channels' finds by fused ranks, and every candidate another
    channel added (the named date's, ``dated``, and the metadata's), in the pool's order; all
    of them when ``keep`` is None or no more channel finds are in the pool."""
    if keep is None:
        return candidates
    fused = fused_ranks(vector_finds, keyword_hits)
    if len(fused) <= keep:
        return candidates
    ranked = sorted(fused, key=lambda memory_id: -fused[memory_id])
    chosen = set(ranked[:keep]) | {c["id"] for c in dated}
    return [c for c in candidates if c["id"] in chosen or c["id"] not in fused]
