"""Deduplication and result ordering (AutoMem's _dedupe_results and sort keys), listed priority ids first, and the
recency bias."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..text import fingerprint
from ..timeparse import query_has_temporal_intent

# Each recall dedupes its candidates twice (per query, then merged), and
# the same memories come back recall after recall.
_content_fingerprint = functools.lru_cache(maxsize=4096)(fingerprint)
from .scoring import parse_epoch

if TYPE_CHECKING:
    from .params import RecallParams


def dedupe(results: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Merge results with the same id or the same normalised content; the higher score wins.

    Ties go to the newer timestamp. A merged winner lists every id it stood
    for in ``deduped_from``. Returns the survivors (first-seen order) and how
    many were removed.
    """
    buckets: list[dict[str, Any]] = []
    merged: dict[int, list[str]] = {}  # bucket -> every id it stood for, once it stands for two
    by_key: dict[tuple[str, str], int] = {}  # ("id", id) and ("fp", fingerprint) -> bucket
    removed = 0
    for result in results:
        id_key = ("id", result["id"])
        content_fp = _content_fingerprint(result["memory"].get("content") or "")
        fp_key = ("fp", content_fp) if content_fp else None
        index = by_key.get(id_key)
        if index is None and fp_key is not None:
            index = by_key.get(fp_key)
        if index is None:  # the usual case: a result no earlier one stands for
            by_key[id_key] = index = len(buckets)
            if fp_key is not None:
                by_key[fp_key] = index
            buckets.append(result)
            continue
        removed += 1
        ids = merged.get(index)
        if ids is None:  # the bucket's first result is still its holder here
            ids = merged[index] = [buckets[index]["id"]]
        ids.append(result["id"])
        if _beats(result, buckets[index]):
            buckets[index] = result
        by_key.setdefault(id_key, index)
        if fp_key is not None:
            by_key.setdefault(fp_key, index)
    for index, ids in merged.items():
        distinct = set(ids)
        if len(distinct) > 1:
            buckets[index] = {**buckets[index], "deduped_from": sorted(distinct)}
    return buckets, removed


def _beats(challenger: dict[str, Any], holder: dict[str, Any]) -> bool:
    a, b = challenger.get("final_score", 0.0), holder.get("final_score", 0.0)
    if a != b:
        return a > b
    return (challenger["memory"].get("timestamp") or "") > (holder["memory"].get("timestamp") or "")


def score_sort_key(result: dict[str, Any]) -> tuple[float, bool, float, float, float]:
    """Highest score first; ties by vector-found first, channel score, importance, then newest."""
    memory = result["memory"]
    importance = memory.get("importance")
    return (
        -float(result.get("final_score", 0.0)),
        result.get("source") != "vector",
        -float(result.get("original_score") or 0.0),
        -float(importance) if isinstance(importance, (int, float)) else 0.0,
        -(parse_epoch(memory.get("timestamp")) or 0.0),
    )


def time_sort_key(result: dict[str, Any]) -> tuple[str, str, str]:
    memory = result["memory"]
    first = memory.get("updated_at") or memory.get("timestamp") or memory.get("last_accessed") or ""
    second = memory.get("timestamp") or memory.get("updated_at") or memory.get("last_accessed") or ""
    return (first, second, result["id"])


def sort_results(results: list[dict[str, Any]], sort: str) -> list[dict[str, Any]]:
    """``score``, or time order: time_* and updated_* share one key (updated_at, then timestamp)."""
    if sort == "score":
        return sorted(results, key=score_sort_key)
    return sorted(results, key=time_sort_key, reverse=sort.endswith("_desc"))


def apply_recency_bias(results: list[dict[str, Any]], queries: list[str], params: "RecallParams",
                       weight: float) -> bool:
    """Re-rank toward newer memories (``on``, or ``auto`` on temporal-intent queries), adding
    ``weight`` × each one's place between the oldest and the newest; whether it applied."""
    active = params.recency_bias == "on" or (
        params.recency_bias == "auto" and any(query_has_temporal_intent(q) for q in queries if q))
    if not active or params.sort != "score" or not results:
        return False
    epochs = {r["id"]: parse_epoch(r["memory"].get("timestamp")) for r in results}
    valid = [e for e in epochs.values() if e is not None]
    spread = (max(valid) - min(valid)) if valid else 0.0
    if spread > 0 and weight > 0:
        low = min(valid)
        for result in results:
            epoch = epochs[result["id"]]
            if epoch is None:
                continue
            relative = (epoch - low) / spread
            result["final_score"] += weight * relative
            result["score"] = result["final_score"]
            result["score_components"]["temporal"] = relative
        results.sort(key=lambda r: -r["final_score"])
    return True


def priority_first(ranked: list[dict[str, Any]], priority_ids: Sequence[str],
                   limit: int) -> list[dict[str, Any]]:
    """Listed priority ids first (in the order given), then the rest, cut to ``limit``."""
    order = {memory_id: n for n, memory_id in enumerate(priority_ids)}
    if not order:
        return ranked[:limit]
    first = sorted((r for r in ranked if r["id"] in order), key=lambda r: order[r["id"]])
    rest = [r for r in ranked if r["id"] not in order]
    return (first + rest)[:limit]
