"""Kagura-style recall (``MemoryStore.recall_v1``, ``POST /api/v1/memory/recall``).

Over the same store as AutoMem's recall: contexts, hybrid / semantic /
keyword search, confidence, supersession folding, content and spans,
related tags, tag suggestions, explore hints, optional cross-encoder
reranking. See the modules for each part's rules.
"""

from .access import restrict_contexts, visible_contexts
from .pipeline import run_recall_v1
from .request import RequestValidationError, parse_request
from .rerank import set_reranker
from .scope import CONTEXT_NOT_FOUND

__all__ = [
    "CONTEXT_NOT_FOUND",
    "RequestValidationError",
    "parse_request",
    "restrict_contexts",
    "run_recall_v1",
    "set_reranker",
    "visible_contexts",
]
