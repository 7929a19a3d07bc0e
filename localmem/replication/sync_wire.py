"""Sync states as JSON, both ways, for a peer behind ``localmem serve`` (``/sync/*`` routes).

Every value read from the wire is checked before the merge rules see it: ids are
UUIDs, times parse, an edge's strength is in [0, 1] and its relation a known type.
A record's own fields are checked again by the store's write path when applied.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import ValidationError
from ..relations import RELATION_TYPES
from ..validation import validate_timestamp, validate_unit_interval, validate_uuid
from .hlc import valid_stamp
from .seen import FLOOR, MAX_REPLICAS, Seen, from_rows, replica
from .sync_rules import ABSENT, EdgeState, MemoryState

MAX_ITEMS = 500  # states per request or answer
STORE_ID = re.compile(r"[0-9a-f]{32}")  # a store's identity (meta store_id)
# What a server's /sync/hello names in ``features`` (a server older than one says nothing of it):
# /sync/seen takes the versions the sync expects there and joins only where they are still held.
SEEN_EXPECT = "seen-expect"
FEATURES = (SEEN_EXPECT,)


def memory_to_json(state: MemoryState) -> dict[str, Any]:
    return {"id": state.id, "record": state.record, "deleted_at": state.deleted_at, "problem": state.problem,
            "purged": state.purged, "deleted_updated_at": state.deleted_updated_at, "hlc": state.hlc,
            "deleted_hlc": state.deleted_hlc, "seen": [list(row) for row in state.seen.rows()]}


def memory_from_json(value: Any, where: str) -> MemoryState:
    if not isinstance(value, dict):
        raise ValidationError(f"{where}: a memory state must be an object")
    memory_id = validate_uuid(value.get("id"), f"{where}.id")
    record, deleted_at, problem = value.get("record"), value.get("deleted_at"), value.get("problem")
    if record is not None:
        if not isinstance(record, dict) or record.get("id") != memory_id:
            raise ValidationError(f"{where}.record must be an object with the state's id")
    if deleted_at is not None:
        validate_timestamp(deleted_at, f"{where}.deleted_at")
        if not isinstance(deleted_at, str):
            raise ValidationError(f"{where}.deleted_at must be an ISO 8601 string")
    if problem is not None and not isinstance(problem, str):
        raise ValidationError(f"{where}.problem must be a string")
    if record is not None and deleted_at is not None:
        raise ValidationError(f"{where}: a state is a record or a deletion, not both")
    purged = value.get("purged", False)
    if not isinstance(purged, bool) or (purged and deleted_at is None):
        raise ValidationError(f"{where}.purged must be true or false, and true only for a deletion")
    deleted_updated_at = value.get("deleted_updated_at")
    if deleted_updated_at is not None:
        if not isinstance(deleted_updated_at, str) or deleted_at is None:
            raise ValidationError(f"{where}.deleted_updated_at must be an ISO 8601 string, on a deletion only")
        validate_timestamp(deleted_updated_at, f"{where}.deleted_updated_at")
    hlc, deleted_hlc = stamp(value, "hlc", where), stamp(value, "deleted_hlc", where)
    if deleted_hlc is not None and deleted_at is None:
        raise ValidationError(f"{where}.deleted_hlc is for a deletion only")
    return MemoryState(memory_id, record=record, deleted_at=deleted_at, problem=problem and problem[:500],
                       purged=purged, deleted_updated_at=deleted_updated_at, hlc=hlc, deleted_hlc=deleted_hlc,
                       seen=seen_summary(value.get("seen"), f"{where}.seen"))


def seen_summary(value: Any, where: str) -> Seen:
    """What a side has seen of a memory: a list of at most ``MAX_REPLICAS`` + 1 [replica, stamp]
    pairs (absent from a peer of an older version: nothing seen)."""
    if value is None:
        return Seen()
    if not isinstance(value, list) or len(value) > MAX_REPLICAS + 1:
        raise ValidationError(f"{where} must be a list of at most {MAX_REPLICAS + 1} [replica, stamp] pairs")
    for n, row in enumerate(value):
        if not (isinstance(row, list) and len(row) == 2 and valid_stamp(row[1])
                and (row[0] == FLOOR or row[0] == replica(row[1]))):
            raise ValidationError(f"{where}[{n}] must be [replica, stamp] ('floor', or the stamp's own replica)")
    return from_rows(tuple(row) for row in value)


def stamp(value: dict[str, Any], name: str, where: str) -> str | None:
    """A clock stamp (``hlc.STAMP``), or None where a peer of an older version sends none."""
    given = value.get(name)
    if given is not None and not valid_stamp(given):
        raise ValidationError(f"{where}.{name} must be a clock stamp (wall-counter-replica)")
    return given


def edge_to_json(state: EdgeState) -> dict[str, Any]:
    return {"key": list(state.key), "strength": state.strength, "updated_at": state.updated_at,
            "properties": state.properties, "deleted_at": state.deleted_at, "hlc": state.hlc}


def edge_from_json(value: Any, where: str) -> EdgeState:
    if not isinstance(value, dict):
        raise ValidationError(f"{where}: an edge state must be an object")
    key = value.get("key")
    if not (isinstance(key, list) and len(key) == 3):
        raise ValidationError(f"{where}.key must be [memory1_id, relation_type, memory2_id]")
    return EdgeState(edge_key(key, where), **_edge_fields(value, where))


def edge_key(key: Any, where: str) -> tuple[str, str, str]:
    if not (isinstance(key, (list, tuple)) and len(key) == 3):
        raise ValidationError(f"{where} must be [memory1_id, relation_type, memory2_id]")
    src, relation, dst = key
    if relation not in RELATION_TYPES:
        raise ValidationError(f"{where}: unknown relation type {str(relation)[:40]!r}")
    return validate_uuid(src, f"{where}[0]"), relation, validate_uuid(dst, f"{where}[2]")


def _edge_fields(value: dict[str, Any], where: str) -> dict[str, Any]:
    strength = value.get("strength")
    if strength is not None:
        strength = validate_unit_interval(strength, f"{where}.strength", None)
    for name in ("updated_at", "deleted_at"):
        if value.get(name) is not None:
            if not isinstance(value[name], str):
                raise ValidationError(f"{where}.{name} must be an ISO 8601 string")
            validate_timestamp(value[name], f"{where}.{name}")
    properties = value.get("properties")
    if properties is not None:
        if not isinstance(properties, str) or len(properties) > 100_000:
            raise ValidationError(f"{where}.properties must be a JSON object as text")
        try:
            if not isinstance(json.loads(properties), dict):
                raise ValueError
        except (ValueError, RecursionError):
            raise ValidationError(f"{where}.properties must be a JSON object as text") from None
    if strength is not None and value.get("deleted_at") is not None:
        raise ValidationError(f"{where}: an edge state is an edge or a removal, not both")
    return {"strength": strength, "updated_at": value.get("updated_at"), "properties": properties,
            "deleted_at": value.get("deleted_at"), "hlc": stamp(value, "hlc", where)}


def items(value: Any, field: str) -> list[Any]:
    """A bounded JSON list."""
    if not isinstance(value, list):
        raise ValidationError(f"'{field}' must be a list")
    if len(value) > MAX_ITEMS:
        raise ValidationError(f"'{field}' holds {len(value)} items; at most {MAX_ITEMS} per request")
    return value


VERSION_TEXT = re.compile(r"[0-9T:.+\-]{19,40}\|[0-9a-f]{0,24}")  # Version.text()


def expected_version(item: dict[str, Any], where: str) -> str | None:
    """A put state's ``expect``: the version the sync read on that side (None: write unchecked)."""
    value = item.get("expect")
    if value is None:
        return None
    if not isinstance(value, str) or not (value == ABSENT or VERSION_TEXT.fullmatch(value)):
        raise ValidationError(f"{where}.expect must be a sync version or 'absent'")
    return value


def base_entry(value: Any, where: str) -> tuple[str, str]:
    """One [memory id, agreed version] pair."""
    if not (isinstance(value, list) and len(value) == 2):
        raise ValidationError(f"{where} must be [memory_id, version]")
    memory_id, version = value
    if not isinstance(version, str) or not VERSION_TEXT.fullmatch(version):
        raise ValidationError(f"{where}[1] is not a sync version")
    return validate_uuid(memory_id, f"{where}[0]"), version


def seen_expected(value: Any, ids: list[str], where: str) -> dict[str, str]:
    """A /sync/seen ``expect``: one [memory id, version or 'absent'] pair for each id joined, no other."""
    given = dict(_expected_pair(item, f"{where}[{n}]") for n, item in enumerate(items(value, where)))
    missing = [memory_id for memory_id in ids if memory_id not in given]
    if missing or len(given) != len(ids):
        raise ValidationError(f"{where} must give one expected version for each memory in 'seen' and no other"
                              f" ({missing[0] if missing else 'an id not in seen'})")
    return given


def _expected_pair(value: Any, where: str) -> tuple[str, str]:
    if not (isinstance(value, list) and len(value) == 2):
        raise ValidationError(f"{where} must be [memory_id, version]")
    version = value[1]
    if not isinstance(version, str) or not (version == ABSENT or VERSION_TEXT.fullmatch(version)):
        raise ValidationError(f"{where}[1] must be a sync version or '{ABSENT}'")
    return validate_uuid(value[0], f"{where}[0]"), version


def seen_entry(value: Any, where: str) -> tuple[str, Seen]:
    """One [memory id, seen summary] pair."""
    if not (isinstance(value, list) and len(value) == 2):
        raise ValidationError(f"{where} must be [memory_id, [[replica, stamp], ...]]")
    return validate_uuid(value[0], f"{where}[0]"), seen_summary(value[1], f"{where}[1]")
