"""Variants of the prompt-level ``unseen_terms`` input, measured on saved candidates (issue 40, branch gate5).

recall's ``unseen_terms`` (localmem/recall/prompt_signals.py) is the IDF-weighted share of the query's
keywords no memory in the scope holds. Fitted on LoCoMo it over-trusts a missing *name* (a question about
another conversation names people this one never mentions), which LongMemEval's prompts do not bear out.
benchmarks/hooks/hook_injection.py saves, with each prompt, its keywords' counts in the scope
(``term_stats``); ``attach_variants`` then adds to every candidate's inputs the variants measured here:

- ``unseen_all``: the share over every keyword, from these counts (recall's input, recomputed);
- ``unseen_lower``: the share over the keywords written in lowercase in the prompt (a capitalised word, which
  is most often a name, neither counts for nor against);
- ``unseen_lower_any``: 1 when any lowercase keyword is unseen (a binary form);
- ``unseen_lower_clip``: ``unseen_lower`` clipped at 0.5 (a capped form);
- ``cosine_x_unseen_lower`` / ``best_cosine_x_unseen_lower``: the candidate's (the prompt's best) cosine times
  ``unseen_lower`` (an interaction: a rare unseen word weighs more when nothing is close);
- ``kth_cosine``: the request's 10th-best cosine, read back from ``cosine - cosine_over_kth``;
- ``best_keyword``: the best keyword evidence among the prompt's candidates.
"""

from __future__ import annotations

from typing import Any, Sequence

from localmem.recall.keywords import match_expression, query_terms
from localmem.recall.prompt_signals import term_weight

VARIANTS = ("unseen_all", "unseen_lower", "unseen_lower_any", "unseen_lower_clip", "cosine_x_unseen_lower",
            "best_cosine_x_unseen_lower", "kth_cosine", "best_keyword")
CLIP = 0.5


def term_stats(conn: Any, query: str, scope: set[int] | None) -> list[tuple[str, bool, int]]:
    """Each keyword of ``query`` (recall's extraction): (term, written in lowercase in the query, how many
    memories of ``scope`` (pks; None: the whole store) hold it, as the full-text index matches it)."""
    stats = []
    for term in query_terms(query):
        rows = {r[0] for r in conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?",
                                           (match_expression([term]),))}
        stats.append((term, term in query, len(rows if scope is None else rows & scope)))
    return stats


def unseen(stats: Sequence[Sequence[Any]], rows: int, lowercase_only: bool = False) -> float:
    """The IDF-weighted share of the keywords (only those written in lowercase, if asked) no memory holds."""
    total = missing = 0.0
    for _term, lower, hits in stats:
        if lowercase_only and not lower:
            continue
        weight = term_weight(rows, hits)
        total += weight
        missing += weight if hits <= 0 else 0.0
    return missing / total if total > 0 else 0.0


def attach_variants(prompt: dict) -> None:
    """Add ``VARIANTS`` to every candidate's inputs of a saved prompt (one with ``terms`` and ``rows``)."""
    stats, rows = prompt.get("terms", []), prompt.get("rows", 0)
    everything, lower = unseen(stats, rows), unseen(stats, rows, lowercase_only=True)
    inputs = [c[2] for c in prompt["candidates"]]
    best_cosine = max((float(i.get("cosine", 0.0)) for i in inputs), default=0.0)
    kth = [float(i["cosine"]) - float(i["cosine_over_kth"]) for i in inputs
           if float(i.get("cosine_over_kth", 0.0)) > 0]
    shared = {"unseen_all": everything, "unseen_lower": lower, "unseen_lower_any": float(lower > 0),
              "unseen_lower_clip": min(lower, CLIP), "best_cosine_x_unseen_lower": best_cosine * lower,
              "kth_cosine": max(kth) if kth else 0.0,
              "best_keyword": max((float(i.get("keyword", 0.0)) for i in inputs), default=0.0)}
    for i in inputs:
        i.update(shared, cosine_x_unseen_lower=float(i.get("cosine", 0.0)) * lower)
