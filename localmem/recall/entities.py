"""Entity expansion: memories tagged with the entities that the results mention."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from .channels import make_scope, trending_candidates
from .params import RecallParams

if TYPE_CHECKING:
    from ..storage.backend import Backend

ENTITY_BONUS = 0.15
MAX_ENTITIES_SEARCHED = 5
MAX_ENTITIES_LISTED = 10
PER_ENTITY = 5
METADATA_CATEGORIES = ("people", "places", "organizations")
_SLUG_STRIP = re.compile(r"[^a-z0-9]+")


def slugify(name: str) -> str:
    return _SLUG_STRIP.sub("-", name.lower()).strip("-")


def collect_entities(results: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(category, name) pairs from metadata.entities and ``entity:<category>:<slug>`` tags, first seen first."""
    found: dict[tuple[str, str], None] = {}
    for result in results:
        memory = result["memory"]
        entities = (memory.get("metadata") or {}).get("entities")
        if isinstance(entities, dict):
            for category in METADATA_CATEGORIES:
                values = entities.get(category)
                if isinstance(values, str):
                    values = [values]
                for value in values if isinstance(values, list) else []:
                    if isinstance(value, str) and len(value.strip()) > 1:
                        found.setdefault((category, value.strip().lower()), None)
        for tag in memory.get("tags") or []:
            parts = tag.lower().split(":")
            if len(parts) >= 3 and parts[0] == "entity" and parts[1] and parts[2]:
                found.setdefault((parts[1], parts[2].replace("-", " ")), None)
    return list(found)


def expand_entities(backend: "Backend", params: RecallParams, sources: list[dict[str, Any]],
                    seen: set[str], score: Callable[[dict[str, Any]], None]
                    ) -> tuple[list[dict[str, Any]], list[str]]:
    """Memories tagged ``entity:<category>:<slug>`` for up to 5 entities of the sources.

    Unlike AutoMem, which always searches the ``people`` category, each entity
    is searched in its own category. Returns the expansions and the entity
    names found (lowercased, at most 10).
    """
    entities = collect_entities(sources)
    names = list(dict.fromkeys(name for _, name in entities))[:MAX_ENTITIES_LISTED]
    expanded: list[dict[str, Any]] = []
    for category, name in entities[:MAX_ENTITIES_SEARCHED]:
        if len(expanded) >= params.expansion_limit:
            break
        tag = f"entity:{category}:{slugify(name)}"
        extra = params.tags if params.expand_respect_tags else []
        search = replace(params, tags=[tag, *extra], tag_mode="all", tag_match="prefix")
        scope = make_scope(search, backend.config.excluded_types)
        for candidate in trending_candidates(backend, scope, PER_ENTITY + len(seen)):
            if candidate["id"] in seen or len(expanded) >= params.expansion_limit:
                continue
            if sum(1 for e in expanded if e["expanded_from_entity"] == name) >= PER_ENTITY:
                break
            seen.add(candidate["id"])
            candidate.update(match_type="entity_expansion", source="entity", expanded_from_entity=name,
                             match_score=0.0, _entity_bonus=ENTITY_BONUS)
            score(candidate)
            expanded.append(candidate)
    return expanded, names
