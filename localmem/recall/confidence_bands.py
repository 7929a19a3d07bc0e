"""``confidence``: is anything relevant here at all? (a triage hint; ranking is untouched)

Semantic searches (``hybrid``, ``semantic``):

- ``top_score``: the raw cosine of the best semantic hit in the candidate
  pool (the semantic arm's nearest neighbours in scope, at most
  ``POOL`` of them, after the supersession/state rules).
- ``prominence``: ``(top − mean background) / mean background``, the
  background being the rest of that pool; None with fewer than 2
  candidates or a background mean ≤ 0.
- ``relative_margin``: ``(top − mean background) / std background``
  (informational; None with fewer than 2 candidates or no spread).
- ``level`` comes from ``top_score`` against three calibrated bands
  (``Config.v1_confidence_bands``, default 0.25 / 0.40 / 0.60 for
  all-MiniLM-L6-v2; see docs/results/history.md): below the first ``none``,
  then ``low``, ``moderate``, ``high``. A ``high`` whose top hit is not
  prominent (prominence < ``MIN_PROMINENCE_FOR_HIGH``: the query resembles
  everything about equally) reads ``moderate``; a near-duplicate top
  (cosine ≥ ``Config.v1_near_duplicate``) is never below ``moderate``.

  Why not threshold on prominence as Kagura does: with MiniLM an off-topic
  query has a tiny background mean (median 0.06 in the calibration, 0.46
  on-topic), so the ratio *inflates* (median prominence 1.49 off-topic vs
  0.33 on-topic) — the failure the spec describes for the old z-score. The
  raw top cosine separates the two cleanly (off-topic max 0.28, on-topic
  min 0.36 on LoCoMo); prominence only guards ``high``.

Keyword-only searches (``search_mode=keyword``, or degraded): no cosines,
so ``top_score`` is the normalised top score (1.0 when anything matched),
``prominence`` / ``relative_margin`` are None, and ``level`` falls back to
the separation of the top BM25 from the rest of the pool in standard
deviations (≥ 2 high, ≥ 1 moderate, ≥ 0.5 low, else none; a single match
reads low).
"""

from __future__ import annotations

import math
from typing import Any

LEVELS = ("none", "low", "moderate", "high")
POOL = 50
MIN_PROMINENCE_FOR_HIGH = 0.10
KEYWORD_Z_BANDS = (0.5, 1.0, 2.0)  # low / moderate / high from
# What the cosine bands alone advise, closing the semantic rationale.
COSINE_ADVICE = {"none": "likely nothing relevant stored; prefer another source",
                 "low": "probably nothing relevant; treat these results with suspicion",
                 "moderate": "relevant memories are likely present; read them and judge",
                 "high": "a close match is stored; read it and judge"}


def _mean_std(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / len(values)
    return mean, math.sqrt(variance)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def semantic_confidence(cosines: list[float], result_count: int,
                        bands: tuple[float, float, float], near_duplicate: float) -> dict[str, Any]:
    """Confidence from the cosines of the semantic candidate pool."""
    if result_count == 0 or not cosines:
        return _empty(result_count, "No memory in scope matched the query.")
    pool = sorted(cosines, reverse=True)[:POOL]
    top = pool[0]
    background = pool[1:]
    prominence = margin = None
    mean_bg = None
    if background:
        mean_bg, std_bg = _mean_std(background)
        if mean_bg > 1e-6:
            prominence = (top - mean_bg) / mean_bg
        if std_bg > 1e-9:
            margin = (top - mean_bg) / std_bg
    level_index = sum(1 for bound in bands if top >= bound)
    level = LEVELS[level_index]
    notes = [f"Best semantic match has cosine {top:.3f}"]
    band_text = {"none": f"below {bands[0]:.2f}", "low": f"{bands[0]:.2f}–{bands[1]:.2f}",
                 "moderate": f"{bands[1]:.2f}–{bands[2]:.2f}", "high": f"≥ {bands[2]:.2f}"}[level]
    notes[0] += f" ({level} band, {band_text})"
    if level == "high" and prominence is not None and prominence < MIN_PROMINENCE_FOR_HIGH:
        level = "moderate"
        notes.append(f"but it barely stands out from its background (prominence {prominence:.2f} "
                     f"< {MIN_PROMINENCE_FOR_HIGH}), so moderate")
    if top >= near_duplicate and LEVELS.index(level) < LEVELS.index("moderate"):
        level = "moderate"
        notes.append("a near-duplicate of the query is stored, so at least moderate")
    if mean_bg is not None:
        others = f"{len(background)} other candidate{'s' if len(background) != 1 else ''}"
        notes.append(f"background mean {mean_bg:.3f} over {others}")
    else:
        notes.append("single candidate: no background to compare with")
    advice = COSINE_ADVICE[level]
    return {
        "level": level,
        "top_score": _round(top),
        "prominence": _round(prominence),
        "relative_margin": _round(margin),
        "result_count": result_count,
        "rationale": "; ".join(notes) + f": {advice}.",
    }


def keyword_confidence(scores: list[float], result_count: int, top_score: float | None
                       ) -> dict[str, Any]:
    """The fallback without cosines: separation of the top keyword score from the rest."""
    if result_count == 0 or not scores:
        return _empty(result_count, "No memory in scope matched the query's keywords.")
    ordered = sorted(scores, reverse=True)
    top, rest = ordered[0], ordered[1:]
    if not rest:
        level, note = "low", "a single keyword match, nothing to compare it with"
    else:
        mean, std = _mean_std(rest)
        if std <= 1e-9:
            level = "low" if top <= mean + 1e-9 else "high"
            note = "all keyword matches score alike" if level == "low" else \
                "the top keyword match stands alone above uniform others"
        else:
            z = (top - mean) / std
            level = LEVELS[sum(1 for bound in KEYWORD_Z_BANDS if z >= bound)]
            note = f"top keyword match is {z:.2f} standard deviations above the other {len(rest)}"
    return {
        "level": level,
        "top_score": _round(top_score),
        "prominence": None,
        "relative_margin": None,
        "result_count": result_count,
        "rationale": f"Keyword-only search (no semantic scores): {note}; "
                     f"keyword overlap does not prove relevance, read the results.",
    }


def _empty(result_count: int, rationale: str) -> dict[str, Any]:
    return {"level": "none", "top_score": None, "prominence": None, "relative_margin": None,
            "result_count": result_count, "rationale": rationale}
