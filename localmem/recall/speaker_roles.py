"""Who said what: the role capture records for a memory, and whom a question is about.

Capture stores each turn with ``metadata.role`` (``user`` or ``assistant``).
A question about the person ("what did I say about…", "my…") is answered by
what the person said; one about the assistant ("what did you recommend…") by
its answers, which are long and often split into parts that compete with the
person's short statements. The learned ranking reads these as features (so
what they are worth is fitted, and measured held out), never a dataset's
formatting: only the stored role, the question's own pronouns and the
memory's length.
"""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

import numpy as np

ROLE_FEATURES = ("role_user", "role_assistant", "query_self", "query_assistant", "log_chars", "split_part")
_SELF = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.IGNORECASE)
_ASSISTANT = re.compile(r"\b(you|you're|you've|you'd|you'll|your|yours|yourself)\b", re.IGNORECASE)
_ROLES = ("user", "assistant")


def query_persons(query: str) -> tuple[float, float]:
    """(whether the query speaks of the person, whether it speaks to or of the assistant)."""
    text = query.replace("\u2019", "'")
    return float(bool(_SELF.search(text))), float(bool(_ASSISTANT.search(text)))


@functools.lru_cache(maxsize=8192)
def _facts_of_metadata_text(text: str) -> tuple[str | None, bool]:
    try:
        metadata = json.loads(text)
    except ValueError:
        return None, False
    return _facts(metadata) if isinstance(metadata, dict) else (None, False)


def _facts(metadata: Any) -> tuple[str | None, bool]:
    """(the stored role when it is one capture writes, whether the memory is one part of a split turn)."""
    if not isinstance(metadata, dict):
        return None, False
    role = metadata.get("role")
    parts = metadata.get("parts")
    split = isinstance(parts, int) and not isinstance(parts, bool) and parts > 1
    return (role if role in _ROLES else None), split


def memory_facts(candidate: dict[str, Any]) -> tuple[str | None, bool]:
    """A candidate's role and split flag, from the metadata text the channels kept (read once
    per text: the same memories come back recall after recall) or the parsed record."""
    texts = candidate.get("_texts")
    if texts is not None and isinstance(texts[1], str):
        return _facts_of_metadata_text(texts[1])
    return _facts(candidate["memory"].get("metadata"))


def role_features(candidates: list[dict[str, Any]], query: str) -> np.ndarray:
    """One row of ROLE_FEATURES per candidate."""
    about_self, about_assistant = query_persons(query)
    out = np.zeros((len(candidates), len(ROLE_FEATURES)))
    out[:, 2], out[:, 3] = about_self, about_assistant
    for row, candidate in zip(out, candidates):
        role, split = memory_facts(candidate)
        row[0], row[1] = float(role == "user"), float(role == "assistant")
        row[4] = math.log1p(len(candidate["memory"].get("content") or ""))
        row[5] = float(split)
    return out
