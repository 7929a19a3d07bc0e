"""Which stored ``project:`` tags a working directory's project names match, and how.

A name matches a tag written in any of the forms people write it: the same
words with another separator or case (``billing_api``, ``BillingAPI``,
``billing-api``) or its leading words (``billing`` for ``billing-api``, not
``api``). The tags a name could match are generated (at most ``MAX_WORDS``
words, a handful of separators) and looked up exactly, so the cost does not
grow with the store. A project named explicitly (setting or project file)
matches its own tag only.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..timeparse import format_timestamp
from .project import ProjectNames, project_tag

if TYPE_CHECKING:
    from ..store import MemoryStore

MAX_WORDS = 8
MIN_PREFIX_CHARS = 3  # "db" alone is too common a leading word to scope by
SEPARATORS = ("-", "_", "", ".", " ")
SAMPLE_TAGS = 8
_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_RUNS = re.compile(r"[^\W_]+")  # letters and digits of any script, between separators


@dataclass(frozen=True)
class ProjectScope:
    """The tags a hook's recall is scoped to, each with how it was matched, and the counts."""
    primary: str | None
    matches: tuple[tuple[str, str, int, int | None], ...]  # (tag, how, current, total); counted=False: 1, None

    @property
    def tags(self) -> list[str]:
        return [tag for tag, _, current, _ in self.matches if current]

    def describe(self) -> dict[str, Any]:
        return {"project": self.primary, "matched": [
            {"tag": tag, "how": how, **({"current": current, "total": total} if total is not None else {})}
            for tag, how, current, total in self.matches]}


def words_of(name: str) -> list[str]:
    """A name's words: split at separators and, in ASCII, at case changes (``BillingAPI`` → billing, api); a run
    with other letters is one word ("数据分析", "café")."""
    runs = _RUNS.findall(unicodedata.normalize("NFC", name))
    words = [w for run in runs for w in (_WORDS.findall(run) if run.isascii() else [run])]
    return [w.lower() for w in words][:MAX_WORDS]


def forms_of(name: str, original: str | None = None) -> dict[str, str]:
    """Every tag ``name`` matches, each with which form it is (the whole name, or its leading words)."""
    forms: dict[str, str] = {project_tag(name): "the name itself"}
    words = words_of(original or name)
    for count in range(len(words), 0, -1):
        lead = words[:count]
        if count < len(words) and len("".join(lead)) < MIN_PREFIX_CHARS:
            continue
        how = "the same words" if count == len(words) else f"its leading word{'s' if count > 1 else ''}"
        for separator in SEPARATORS:
            forms.setdefault(project_tag(separator.join(lead)), how)
    return forms


def resolve(store: "MemoryStore", names: ProjectNames, *, counted: bool = False) -> ProjectScope:
    """The stored tags ``names`` match that some current memory carries, with how; ``counted``:
    every matching tag, with how many current and total memories carry it (``hooks status``;
    the count grows with the project, so the prompt hook does not ask it)."""
    candidates: dict[str, str] = {}
    for name, how, written in names.names:
        if names.explicit:
            candidates.setdefault(project_tag(name), how)
            continue
        for tag, form in forms_of(name, written).items():
            candidates.setdefault(tag, f"{how} ({written!r}, {form})" if form != "the name itself" else how)
    if counted:
        counts = tag_counts(store, list(candidates))
    else:
        counts = {tag: (1, None) for tag in current_tags(store, list(candidates))}
    matches = tuple((tag, candidates[tag], *counts[tag]) for tag in candidates if tag in counts)
    return ProjectScope(names.primary, matches)


def tag_counts(store: "MemoryStore", tags: list[str]) -> dict[str, tuple[int, int]]:
    """``{tag: (current, total)}`` for those of ``tags`` some memory carries."""
    rows = store.conn.execute(store.sql["hook_project_tag_counts"],
                              {"tags": json.dumps(tags), "now": format_timestamp(store.now())})
    return {str(tag): (int(current or 0), int(total)) for tag, total, current in rows}


def current_tags(store: "MemoryStore", tags: list[str]) -> list[str]:
    """Those of ``tags`` that some current memory carries."""
    rows = store.conn.execute(store.sql["hook_project_tags_current"],
                              {"tags": json.dumps(tags), "now": format_timestamp(store.now())})
    return [str(row[0]) for row in rows]


def some_project_tags(store: "MemoryStore") -> list[str]:
    return [row[0] for row in store.conn.execute(store.sql["hook_project_tags_sample"], {"limit": SAMPLE_TAGS})]


def session_project(store: "MemoryStore", session_id: str) -> str | None:
    """The project tag of the session's newest captured memory (its name), or None: a session whose folder
    was deleted keeps the project its earlier turns were captured in."""
    with store.lock:
        page = store.list_memories(tags=[f"session:{session_id}"], tag_match="exact", sort="time_desc", limit=1)
    for memory in page["memories"]:
        for tag in memory.get("tags") or []:
            if isinstance(tag, str) and tag.startswith("project:") and len(tag) > len("project:"):
                return tag[len("project:"):]
    return None
