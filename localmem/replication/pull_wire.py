"""What ``localmem pull`` reads from a server, checked field by field before anything is written.

The server is not trusted: every memory and edge of its listing is checked
(types, finite numbers in range, bounded strings, lists and JSON depth,
readable timestamps, ids of plain characters). A record that fails is reported
by its id and skipped; nothing of it reaches the store.

What AutoMem adds on its own is left out, both ways the same: the ``entity:*``
tags and the ``entities`` / ``enrichment`` metadata of its enrichment worker,
and the ``localmem_id`` marker a push puts in metadata. So a memory pushed and
pulled back compares equal to the local one, and a pulled memory pushed again
sends AutoMem nothing it would not keep.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import LocalMemError
from ..relations import AUTHORABLE_TYPES, RELATION_TYPES
from ..timeparse import format_timestamp, parse_timestamp
from ..validation import CONTENT_HARD_LIMIT
from .push_map import fingerprint
from .conflict_copy import CONFLICT_KEY
from .push_wire import MARKER, SERVER_METADATA, SERVER_TAG_PREFIX, translate_ids

# A server id: the characters of a UUID or a plain token, nothing that could mean a path.
REMOTE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
MAX_TAGS = 200
MAX_TAG_CHARS = 256
MAX_TYPE_CHARS = 64
MAX_METADATA_BYTES = 64 * 1024
MAX_JSON_DEPTH = 32
MAX_CONTENT_CHARS = CONTENT_HARD_LIMIT * 4  # the store refuses over CONTENT_HARD_LIMIT itself
# The fields pull takes from a remote memory (AutoMem's /graph/snapshot gives these).
FIELDS = ("content", "tags", "type", "importance", "confidence", "timestamp", "metadata")


class BadRecord(LocalMemError):
    """A remote record that cannot be taken; the message says which field and why."""


@dataclass(frozen=True)
class RemoteMemory:
    remote_id: str
    fields: dict[str, Any]  # FIELDS, checked; metadata.superseded_by still a remote id
    updated_at: str | None
    marker: str | None = None  # the local id a push left in metadata.localmem_id

    def hashes(self) -> dict[str, str]:
        return {name: fingerprint(self.fields.get(name)) for name in FIELDS}


@dataclass(frozen=True)
class RemoteEdge:
    src: str
    dst: str
    type: str
    strength: float
    properties: dict[str, Any]


def remote_id(value: Any, what: str = "id") -> str:
    if not isinstance(value, str) or not REMOTE_ID.fullmatch(value):
        shown = repr(value)[:80]
        raise BadRecord(f"'{what}' is not a plain id (letters, digits, '.', '_', ':', '-'; at most 128): {shown}")
    return value


def _unit(value: Any, name: str, *, optional: bool) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRecord(f"'{name}' must be a number, not {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise BadRecord(f"'{name}' must be a finite number from 0 to 1, got {value!r}")
    return number


def _timestamp(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > 64:
        raise BadRecord(f"'{name}' must be an ISO 8601 string of at most 64 characters")
    try:
        return format_timestamp(parse_timestamp(value, field=name))
    except (LocalMemError, ValueError, OverflowError) as exc:
        raise BadRecord(f"'{name}' is not a readable timestamp: {value!r} ({exc})") from None


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """The nesting depth of a JSON value, walked without recursion; stops past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _finite_json(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return False
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _unicode(value: Any, name: str) -> None:
    """``BadRecord`` when a string anywhere in ``value`` (keys too) is not valid Unicode: JSON's
    ``\\ud800`` escapes decode to lone surrogates, which no UTF-8 store can hold."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise BadRecord(f"'{name}' holds text that is not valid Unicode (a lone surrogate)") from None


def _metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):  # some routes give it as JSON text
        if len(value) > MAX_METADATA_BYTES:
            raise BadRecord(f"'metadata' is over {MAX_METADATA_BYTES} bytes")
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise BadRecord("'metadata' is text that is not JSON") from None
    if not isinstance(value, dict):
        raise BadRecord(f"'metadata' must be an object, not {type(value).__name__}")
    if json_depth(value) > MAX_JSON_DEPTH:
        raise BadRecord(f"'metadata' is nested deeper than {MAX_JSON_DEPTH} levels")
    if not _finite_json(value):
        raise BadRecord("'metadata' holds NaN or an infinite number")
    kept = {k: v for k, v in value.items() if k not in SERVER_METADATA and k != MARKER}
    size = len(json.dumps(kept, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    if size > MAX_METADATA_BYTES:
        raise BadRecord(f"'metadata' is {size} bytes, over {MAX_METADATA_BYTES}")
    ref = kept.get("superseded_by")
    if ref is not None:
        remote_id(ref, "metadata.superseded_by")
    return kept


def local_metadata(metadata: dict[str, Any], local_ref: Callable[[str], str | None]) -> dict[str, Any]:
    """A server memory's metadata with the server's ids it names as this store's (``local_ref``):
    ``superseded_by`` (dropped when it names a memory this pull does not have), and a conflict copy's
    marker (``sync_conflict.memory_id``, the memory it lost to). A marker naming no memory the server
    has (a push before it sent the server's id sent the copy's store's own id, which names nothing
    here) names the memory ``superseded_by`` names here: a conflict copy's two marks name one memory
    (``conflict_copy.conflict_copy_record``)."""
    out, missing = translate_ids(metadata, local_ref)
    if "superseded_by" in missing:
        del out["superseded_by"]
    elif CONFLICT_KEY in missing and isinstance(out.get("superseded_by"), str):
        out[CONFLICT_KEY] = {**out[CONFLICT_KEY], "memory_id": out["superseded_by"]}
    return out


def _tags(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRecord(f"'tags' must be a list, not {type(value).__name__}")
    if len(value) > MAX_TAGS:
        raise BadRecord(f"'tags' has {len(value)} items, more than {MAX_TAGS}")
    tags = []
    for tag in value:
        if not isinstance(tag, str) or len(tag) > MAX_TAG_CHARS:
            raise BadRecord(f"'tags' must hold strings of at most {MAX_TAG_CHARS} characters")
        if not tag.lower().startswith(SERVER_TAG_PREFIX):
            tags.append(tag)
    return tags


def read_memory(node: Any) -> RemoteMemory:
    """One memory of the server's listing, checked; ``BadRecord`` naming the field otherwise."""
    if not isinstance(node, dict):
        raise BadRecord(f"a memory must be an object, not {type(node).__name__}")
    ident = remote_id(node.get("id"))
    for name in ("content", "tags", "type", "metadata", "timestamp", "updated_at"):
        _unicode(node.get(name), name)
    content = node.get("content")
    if not isinstance(content, str) or not content.strip():
        raise BadRecord("'content' must be a non-empty string")
    if len(content) > MAX_CONTENT_CHARS:
        raise BadRecord(f"'content' has {len(content)} characters, more than {MAX_CONTENT_CHARS}")
    kind = node.get("type")
    if kind is not None and (not isinstance(kind, str) or len(kind) > MAX_TYPE_CHARS):
        raise BadRecord(f"'type' must be a string of at most {MAX_TYPE_CHARS} characters")
    fields = {
        "content": content.strip(),
        "tags": _tags(node.get("tags")),
        "type": kind,
        "importance": _unit(node.get("importance", 0.5), "importance", optional=True),
        "confidence": _unit(node.get("confidence"), "confidence", optional=True),
        "timestamp": _timestamp(node.get("timestamp"), "timestamp"),
        "metadata": _metadata(node.get("metadata")),
    }
    raw = node.get("metadata")
    raw = json.loads(raw) if isinstance(raw, str) else raw  # read by _metadata above: JSON
    marker = raw.get(MARKER) if isinstance(raw, dict) and isinstance(raw.get(MARKER), str) else None
    return RemoteMemory(ident, fields, _timestamp(node.get("updated_at"), "updated_at"), marker)


def read_edge(item: Any) -> RemoteEdge:
    """One edge of the listing, checked. Its properties are cut to what the relation type keeps."""
    if not isinstance(item, dict):
        raise BadRecord(f"an edge must be an object, not {type(item).__name__}")
    src = remote_id(item.get("source"), "source")
    dst = remote_id(item.get("target"), "target")
    kind = item.get("type")
    if not isinstance(kind, str) or len(kind) > MAX_TYPE_CHARS:
        raise BadRecord("'type' must be a relation name")
    strength = _unit(item.get("strength", 0.5), "strength", optional=False)
    props = item.get("properties") or {}
    if not isinstance(props, dict):
        raise BadRecord("'properties' must be an object")
    _unicode(props, "properties")
    known = RELATION_TYPES.get(kind.upper())
    kept = {k: v for k, v in props.items() if known is not None and k in known.properties}
    if json_depth(kept) > MAX_JSON_DEPTH or not _finite_json(kept):
        raise BadRecord("'properties' is nested too deep or holds NaN")
    if len(json.dumps(kept, ensure_ascii=False, allow_nan=False)) > MAX_METADATA_BYTES:
        raise BadRecord(f"'properties' is over {MAX_METADATA_BYTES} bytes")
    return RemoteEdge(src, dst, kind.upper(), float(strength or 0.0), kept)


def authorable(edge: RemoteEdge) -> bool:
    """Whether the store can hold this edge as made by a person (AutoMem's enrichment makes
    SIMILAR_TO / PRECEDED_BY / DISCOVERED itself; localmem's API takes none of them)."""
    return edge.type in AUTHORABLE_TYPES
