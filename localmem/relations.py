"""The relationship-type registry (AutoMem's RELATIONSHIP_TYPES)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RelationType:
    name: str
    properties: tuple[str, ...]
    authorable: bool
    default_expand: bool


RELATION_TYPES: dict[str, RelationType] = {
    rt.name: rt
    for rt in (
        RelationType("RELATES_TO", (), True, True),
        RelationType("LEADS_TO", (), True, True),
        RelationType("OCCURRED_BEFORE", (), True, True),
        RelationType("PREFERS_OVER", ("context", "reason"), True, True),
        RelationType("EXEMPLIFIES", ("pattern_type", "confidence"), True, True),
        RelationType("CONTRADICTS", ("resolution", "reason"), True, True),
        RelationType("REINFORCES", ("observations",), True, True),
        RelationType("INVALIDATED_BY", ("reason", "timestamp"), True, True),
        RelationType("EVOLVED_INTO", ("confidence", "reason"), True, True),
        RelationType("DERIVED_FROM", ("transformation", "confidence"), True, True),
        RelationType("PART_OF", ("role", "context"), True, True),
        RelationType("SIMILAR_TO", ("score",), False, False),
        RelationType("PRECEDED_BY", ("count",), False, False),
        RelationType("DISCOVERED", ("kind", "confidence", "similarity", "origin"), False, False),
    )
}
AUTHORABLE_TYPES: tuple[str, ...] = tuple(sorted(n for n, rt in RELATION_TYPES.items() if rt.authorable))
DEFAULT_EXPAND_TYPES: tuple[str, ...] = tuple(n for n, rt in RELATION_TYPES.items() if rt.default_expand)
SUPERSESSION_TYPES: tuple[str, ...] = ("INVALIDATED_BY", "EVOLVED_INTO")


def supersession_meaning(relation: str, old_id: str, new_id: str, old_text: str | None = None,
                         new_text: str | None = None) -> str | None:
    """What the edge ``old -[relation]-> new`` does to recall, in words; None unless it
    is a supersession edge. The texts (say, the start of each memory) make a
    reversed pair plain to see."""
    if relation not in SUPERSESSION_TYPES:
        return None
    hidden = f'"{old_text}"' if old_text else old_id
    shown = f'"{new_text}"' if new_text else new_id
    return f"{old_id} is now superseded by {new_id}: recall hides {hidden} and shows {shown} in its place"
