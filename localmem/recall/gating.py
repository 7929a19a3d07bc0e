"""Weak-result gating: the adaptive score floor and min_score."""

from __future__ import annotations

from typing import Any


def adaptive_floor(scores: list[float]) -> float | None:
    """The floor at the largest early gap in the scores, or None when there is no clear cut.

    Looks for the biggest drop between neighbours in the top half (at least
    the top 3); if it exceeds a quarter of the best score, the floor is the
    score just below that drop (AutoMem keeps that one result too) — unless
    cutting would keep less than half.
    """
    n = len(scores)
    if n <= 3:
        return None
    ordered = sorted(scores, reverse=True)
    halfway = max(3, n // 2)
    best_gap, gap_index = 0.0, None
    for i in range(1, min(halfway, n)):
        gap = ordered[i - 1] - ordered[i]
        if gap > best_gap:
            best_gap, gap_index = gap, i
    if gap_index is None or best_gap <= 0.25 * ordered[0]:
        return None
    floor = ordered[gap_index]
    kept = sum(1 for s in scores if s >= floor)
    return floor if kept >= (n + 1) // 2 else None


def apply_score_gates(results: list[dict[str, Any]], *, sort: str, use_adaptive: bool,
                      min_score: float) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Adaptive floor (score sort only), then min_score; returns kept results and score_filter."""
    floor = None
    kept = results
    if sort == "score" and use_adaptive:
        floor = adaptive_floor([r["final_score"] for r in results])
        if floor is not None:
            kept = [r for r in kept if r["final_score"] >= floor]
    if min_score > 0:
        kept = [r for r in kept if r["final_score"] >= min_score]
    if floor is None and min_score <= 0:
        return kept, None
    return kept, {"min_score": min_score, "adaptive_floor": floor,
                  "filtered_count": len(results) - len(kept)}
