"""The search scope of one request: which contexts, types, scope and tags.

A context named in ``filters.context_id`` must exist (hold a memory) and be
visible to the caller; otherwise the answer is the same ``NotFoundError``
whichever the reason, so a caller cannot probe for contexts it may not see.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NotFoundError
from .access import visible_contexts
from .request import Filters

if TYPE_CHECKING:
    from ..storage.backend import Backend

CONTEXT_NOT_FOUND = "Context not found"


@dataclass
class SearchScope:
    contexts: list[str] | None  # None = every context
    filters: Filters
    excluded_types: tuple[str, ...]

    @property
    def context_only(self) -> bool:
        """True when nothing but the contexts narrows the search."""
        f = self.filters
        return not (f.types or f.raw_types or f.scope or f.tags)

    @property
    def unfiltered(self) -> bool:
        return self.contexts is None and not (self.filters.types or self.filters.raw_types
                                              or self.filters.scope or self.filters.tags)

    def bindings(self, *, with_tags: bool = True) -> dict[str, Any]:
        """Named parameters of kagura_scope_filter.sql."""
        f = self.filters
        tags = f.tags if with_tags else []
        return {
            "excluded_types": json.dumps(list(self.excluded_types)),
            "contexts": self.contexts_json,
            "types": json.dumps(f.types) if (f.types or f.raw_types) else None,
            "raw_types": json.dumps(f.raw_types),
            "scope": f.scope,
            "tags": json.dumps(tags) if tags else None,
            "tag_mode": f.tag_mode,
            "tag_count": len(tags),
        }

    @property
    def contexts_json(self) -> str | None:
        return json.dumps(self.contexts) if self.contexts is not None else None

    def in_contexts(self, memory: dict[str, Any]) -> bool:
        return self.contexts is None or memory.get("context") in self.contexts

    def passes(self, memory: dict[str, Any]) -> bool:
        """The rules of kagura_scope_filter.sql, for a memory that arrived another way."""
        f = self.filters
        if memory.get("archived") or memory.get("type") in self.excluded_types:
            return False
        if not self.in_contexts(memory):
            return False
        metadata = memory.get("metadata") or {}
        if f.types or f.raw_types:
            raw_type = metadata.get("type")
            raw = str(raw_type).lower() if raw_type is not None else None
            if memory.get("type") not in f.types and raw not in f.raw_types:
                return False
        if f.scope is not None:
            scope = metadata.get("scope")
            if str(scope if scope is not None else "persistent").lower() != f.scope:
                return False
        if f.tags:
            prefixes = set(memory.get("tag_prefixes") or [])
            hits = sum(1 for tag in f.tags if tag in prefixes)
            if hits == 0 or (f.tag_mode == "all" and hits < len(f.tags)):
                return False
        return True


def resolve_scope(backend: "Backend", filters: Filters) -> SearchScope:
    """The scope of a request; ``NotFoundError`` for a missing or hidden context."""
    visible = visible_contexts()
    if filters.context_id is not None:
        exists = bool(backend.conn.execute(backend.sql["kagura_context_exists"],
                                         {"context": filters.context_id}).fetchone()[0])
        if not exists or (visible is not None and filters.context_id not in visible):
            raise NotFoundError(CONTEXT_NOT_FOUND)
        contexts: list[str] | None = [filters.context_id]
    elif visible is not None:
        contexts = sorted(visible)
    else:
        contexts = None
    return SearchScope(contexts=contexts, filters=filters,
                       excluded_types=tuple(backend.config.excluded_types))
