"""Prompt-level evidence for ``relevance``: does this store speak to the query at all?

The per-memory inputs (cosine, coverage, token, keyword, place) read as high for an
unrelated prompt's best memory as for a related prompt's. Two numbers recall has
already computed look at the prompt against the whole scope instead:

- ``cosine_over_kth``: a result's cosine less the ``KTH`` best cosine among the
  request's candidates (the vector channel's neighbours and every other candidate scored
  against the query vector), that k-th clipped at 0 and read as 0 when there are fewer
  than ``KTH``. How far the memory stands out from the store's background for this
  query. Removing a competitor (superseding it, a smaller scope) can only lower or keep
  the k-th value, so the input can only rise: superseding never lowers relevance.
- ``unseen_terms``: the IDF-weighted share of the query's keywords that no memory in the
  scope contains (the store's document frequencies; within a narrowed scope, its own
  counts, which scoped keyword scoring already read). A prompt about something never
  discussed carries rare words nothing stored has. A smaller scope can only raise it.

No second query pass: both read what the search built (the candidates' cosines, the
keyword scorer's counts, cached per store generation).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    from .keywords import KeywordScorer
    from .scoped_keywords import ScopedKeywords

KTH = 10


def kth_cosine(cosines: Iterable[float], k: int = KTH) -> float:
    """The k-th best of ``cosines``, clipped at 0; 0 when there are fewer than ``k``. Monotone:
    dropping any cosine never raises it."""
    ordered = sorted((c for c in cosines if isinstance(c, (int, float)) and math.isfinite(c)), reverse=True)
    return max(0.0, float(ordered[k - 1])) if len(ordered) >= k else 0.0


def term_weight(rows: int, hits: int) -> float:
    """A keyword's idf among ``rows`` memories of which ``hits`` contain it (never 0 or negative)."""
    return math.log(1.0 + (max(rows, 0) - hits + 0.5) / (hits + 0.5))


def unseen_share(terms: Sequence[str], frequencies: Sequence[int], rows: int,
                 absent_in_scope: Iterable[str] = ()) -> float:
    """The IDF-weighted share of ``terms`` no memory holds: a term whose document frequency is 0,
    or one named in ``absent_in_scope`` (found in the store but not in the narrowed scope).
    0.0 for a query without keywords."""
    absent = set(absent_in_scope)
    total = unseen = 0.0
    for term, hits in zip(terms, frequencies):
        missing = hits <= 0 or term in absent
        weight = term_weight(rows, 0 if missing else hits)
        total += weight
        unseen += weight if missing else 0.0
    return round(unseen / total, 6) if total > 0 else 0.0


def prompt_inputs(cosines: Iterable[float], scorer: "KeywordScorer",
                  scoped: "ScopedKeywords | None") -> dict[str, float]:
    """``kth_cosine`` and ``unseen_terms`` for one query, from the request's candidate cosines, the
    query's keyword scorer (its terms and store-wide document frequencies) and, for a narrowed
    scope, its scoped statistics (the searched terms no memory in scope holds)."""
    absent = [term for term, weight in scoped.weights()[1].items() if weight is None] if scoped is not None else []
    return {"kth_cosine": kth_cosine(cosines),
            "unseen_terms": unseen_share(scorer.terms, scorer.document_frequencies, scorer.total, absent)}
