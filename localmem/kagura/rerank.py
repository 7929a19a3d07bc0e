"""``use_rerank``: reorder the top candidates with a cross-encoder.

The reranker is any object with ``predict(pairs) -> scores`` (pairs of
(query, content); higher is more relevant) — a sentence-transformers
``CrossEncoder`` loaded from ``Config.rerank_model``
(``LOCALMEM_RERANK_MODEL``: a model name or a local folder), or one given
with ``set_reranker(store, obj)``. It is loaded once per store, on first
use, and kept on the store's backend; a model that cannot load (not installed, not downloaded, offline) is
remembered as unavailable and the search runs unreranked, saying so.

``use_rerank``: true → rerank when a reranker is available (else
``{"applied": false, "reason": "unavailable"}``); false → never
(``"disabled"``); omitted → rerank when one is configured
(``"not_configured"`` otherwise). Only the order changes: ``score`` and
``confidence`` stay those of the search; each reranked row carries
``rerank_score``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..storage.backend import Backend

logger = logging.getLogger("localmem.kagura")

RERANK_POOL_MIN = 20
_UNAVAILABLE = object()  # a configured model that could not load, remembered as such


def set_reranker(target: Any, reranker: Any, name: str | None = None) -> None:
    """Use ``reranker`` (an object with ``predict(pairs)``) for a store (or its backend); None forgets it."""
    backend: "Backend" = getattr(target, "backend", target)
    if reranker is None:
        backend.reranker = None
        return
    if not callable(getattr(reranker, "predict", None)):
        raise TypeError("a reranker needs a predict(pairs) method")
    backend.reranker = (reranker, name or getattr(reranker, "name", None) or type(reranker).__name__)


def _load(model: str) -> Any:
    from sentence_transformers import CrossEncoder  # heavy: only when configured and asked

    return CrossEncoder(model)


def resolve(backend: "Backend") -> tuple[Any, str | None, bool]:
    """(reranker or None, its name, whether one is configured at all)."""
    known = backend.reranker
    if known is not None:
        reranker, name = known
        return (None if reranker is _UNAVAILABLE else reranker), name, True
    model = backend.config.rerank_model
    if not model:
        return None, None, False
    try:
        reranker: Any = _load(model)
    except Exception as exc:  # ImportError, OSError (not downloaded / offline), bad config …
        logger.warning("Reranker %r is unavailable: %s", model, exc)
        reranker = _UNAVAILABLE
    backend.reranker = (reranker, model)
    return (None if reranker is _UNAVAILABLE else reranker), model, True


def rerank(backend: "Backend", query: str, items: list[Any], texts: list[str],
           requested: bool | None, k: int
           ) -> tuple[list[Any], dict[str, Any], list[float | None]]:
    """Reorder ``items`` (best first) by cross-encoder score of their ``texts``.

    Returns the new order, the ``rerank`` report and the rerank scores aligned
    with the new order (None for items beyond the reranked top).
    """
    none: list[float | None] = [None] * len(items)
    if requested is False:
        return items, {"applied": False, "reason": "disabled"}, none
    reranker, name, configured = resolve(backend)
    if reranker is None:
        reason = "unavailable" if (requested or configured) else "not_configured"
        return items, {"applied": False, "reason": reason}, none
    if not items:
        return items, {"applied": True, "model": name, "reranked": 0}, none
    count = min(len(items), max(3 * k, RERANK_POOL_MIN))
    try:
        raw = reranker.predict([(query, text) for text in texts[:count]])
        scores = [float(s) for s in list(raw)]
        if len(scores) != count:
            raise ValueError(f"the reranker returned {len(scores)} scores for {count} pairs")
    except Exception as exc:
        logger.warning("Reranking failed (%s); returning the search order", exc)
        return items, {"applied": False, "reason": "unavailable", "model": name}, none
    order = sorted(range(count), key=lambda i: (-scores[i], i))
    reordered = [items[i] for i in order] + items[count:]
    aligned: list[float | None] = [scores[i] for i in order] + [None] * (len(items) - count)
    return reordered, {"applied": True, "model": name, "reranked": count}, aligned
