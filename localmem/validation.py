"""Validation and defaults for stored fields (AutoMem's POST /memory rules).

Every function raises ``ValidationError`` with a message a caller can act on;
nothing here touches the database.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from array import array
from datetime import datetime
from typing import Any

from .errors import ValidationError
from .timeparse import format_timestamp, parse_timestamp

CONTENT_HARD_LIMIT = 2000
MAX_TEXT_FIELD = 256
MAX_CONTEXT_NAME = 128
MAX_METADATA_DEPTH = 32
MAX_METADATA_BYTES = 1_000_000
# JSON text from outside (CLI arguments, import lines, MCP messages) is
# refused past this nesting before it is parsed: Python's decoder would
# otherwise recurse until RecursionError. Stored values are limited further
# (metadata: MAX_METADATA_DEPTH).
MAX_JSON_DEPTH = 64
# Accepted embedding norms. sqlite-vec computes cosines in float32 (sums of
# squares and dot products), whose normal range is about 1.2e-38 to 3.4e38.
# Any two vectors with norms in [1e-6, 1e6] have products of norms in
# [1e-12, 1e12], so every sum stays 26 orders of magnitude inside that range
# and subnormal components (below 1.2e-38) cannot move a cosine by more than
# 1e-26: the cosine of an accepted vector is as exact as float32 allows.
# Outside it, a vector of denormals (1e-40 each) has a float32 norm of 0 and
# a cosine of +-inf; real embeddings have norms near 1 (unit length is best).
MIN_EMBEDDING_NORM = 1e-6
MAX_EMBEDDING_NORM = 1e6


def check_text(value: str, field: str) -> str:
    """Reject text SQLite cannot store faithfully: NUL bytes and lone surrogates."""
    if "\x00" in value:
        raise ValidationError(f"'{field}' must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(f"'{field}' is not valid Unicode text (lone surrogate)") from exc
    return value


def validate_content(content: Any) -> str:
    if content is not None and not isinstance(content, str):
        raise ValidationError(f"'content' must be a string, not {type(content).__name__}")
    if content is None or not content.strip():
        raise ValidationError("'content' is required")
    text = check_text(content.strip(), "content")
    if len(text) > CONTENT_HARD_LIMIT:
        raise ValidationError(
            f"Content exceeds maximum length of {CONTENT_HARD_LIMIT} characters "
            f"({len(text)} provided). Please split into smaller memories or summarize."
        )
    return text


def validate_unit_interval(value: Any, field: str, default: float | None) -> float | None:
    """A number in [0, 1] (importance, confidence, strength); None gives the default."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ValidationError(f"'{field}' must be a number") from None
        else:
            raise ValidationError(f"'{field}' must be a number")
    number = float(value)
    if not math.isfinite(number) or number < 0.0 or number > 1.0:
        raise ValidationError(f"'{field}' must be between 0 and 1")
    return number


def _check_json_value(value: Any, depth: int, path: str) -> None:
    if depth > MAX_METADATA_DEPTH:
        raise ValidationError(f"'metadata' is nested deeper than {MAX_METADATA_DEPTH} levels")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError(f"'metadata' keys must be strings (at {path})")
            check_text(key, "metadata")
            _check_json_value(item, depth + 1, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check_json_value(item, depth + 1, f"{path}[{index}]")
    elif isinstance(value, str):
        check_text(value, "metadata")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"'metadata' numbers must be finite (at {path})")
    elif value is None or isinstance(value, bool):
        return
    elif isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:  # as every JSON reader here (import, HTTP, CLI) refuses it
            raise ValidationError(f"'metadata' integers must fit in 64 bits (at {path})")
    else:
        raise ValidationError(
            f"'metadata' values must be JSON types, got {type(value).__name__} at {path}"
        )


def validate_metadata(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError("'metadata' must be an object")
    _check_json_value(value, 1, "metadata")
    if len(encode_json(value)) > MAX_METADATA_BYTES:
        raise ValidationError(f"'metadata' is larger than {MAX_METADATA_BYTES} bytes")
    return value


# Built once: json.dumps with options builds a new encoder on every call.
_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_json(value: Any) -> str:
    return _COMPACT_JSON.encode(value)


# A JSON string literal (unrolled: no backtracking), and anything but a bracket.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_nesting(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets in strings not counted)."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depth = deepest = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


_STRING_OR_BRACKET = re.compile(_JSON_STRING.pattern + r"|[\[\]{}]", re.DOTALL)


def shallow_json(text: str) -> str:
    """``text`` with every array and object below the top level replaced by ``null``.

    What is left parses without recursion, so the top-level members of a value
    too deep to parse can still be read (the id of a JSON-RPC request nested
    100,000 deep, to answer it). Broken text stays broken.
    """
    parts: list[str] = []
    depth = position = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if depth <= 1:
            parts.append(text[position:match.start()])
        if token[0] == '"':
            if depth <= 1:
                parts.append(token)
        elif token in "[{":
            depth += 1
            if depth <= 2:
                parts.append(token if depth == 1 else "null")
        else:
            if depth == 1:
                parts.append(token)
            depth -= 1
        position = match.end()
    if depth <= 1:
        parts.append(text[position:])
    return "".join(parts)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e999: valid JSON syntax, but no float holds it
        raise ValueError(f"the number {text[:20]} is out of range (it overflows a 64-bit float)")
    return number


INT_MIN, INT_MAX = -2**63, 2**63 - 1  # what SQLite can store
_INT_DIGITS = 20  # longer integer literals are out of range whatever their digits


def _int64(text: str) -> int:
    # Checked before int(): a 5,000-digit literal would otherwise hit Python's
    # int-conversion limit, and a 19-digit one may still not fit in 64 bits.
    if len(text.lstrip("-")) <= _INT_DIGITS:
        value = int(text)
        if INT_MIN <= value <= INT_MAX:
            return value
    shown = text if len(text) <= 24 else f"{text[:12]}…({len(text)} characters)"
    raise ValueError(f"the integer {shown} is out of range (integers must fit in 64 bits)")


class JSONTextError(ValidationError):
    """JSON text that cannot be used; ``reason`` says why without naming the field."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"'{field}' is not valid JSON: {reason}")
        self.reason = reason


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key[:40]!r} is given twice in one object")
        found[key] = value
    return found


def decode_json(text: str | bytes, field: str, *, max_depth: int = MAX_JSON_DEPTH,
                unique_keys: bool = False) -> Any:
    """Parse JSON text from outside; ``JSONTextError`` (a ValidationError) naming ``field`` if unusable.

    Strict JSON only: no NaN, Infinity, floats beyond float range or
    integers beyond 64 bits, no nesting deeper than ``max_depth`` (checked
    before parsing, so a line nested 100,000 deep is refused quickly instead
    of exhausting the stack).
    Lone surrogates (the escape ``\\ud800``) are decoded; the field checks
    reject them by name. ``unique_keys`` refuses an object with a key given twice (JSON
    parsers differ on which one counts).
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONTextError(field, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not isinstance(text, str):
        raise JSONTextError(field, f"expected text, not {type(text).__name__}")
    too_deep = f"nested deeper than {max_depth} levels"
    if json_nesting(text) > max_depth:
        raise JSONTextError(field, too_deep)
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float,
                          parse_int=_int64, object_pairs_hook=_unique_keys if unique_keys else None)
    except RecursionError:  # not reached below max_depth; kept so no caller ever sees one
        raise JSONTextError(field, too_deep) from None
    except json.JSONDecodeError as exc:
        raise JSONTextError(field, f"{exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except ValueError as exc:  # NaN/Infinity, numbers out of range
        raise JSONTextError(field, str(exc)) from None


def strip_non_finite(value: Any) -> Any:
    """Replace NaN and infinities by None throughout a response, in place; returns it.

    The last line of defence where responses are built: validation keeps
    such numbers out of the file and the scores finite, but a row damaged on
    disk must still not turn into a response strict JSON cannot carry.
    """
    stack = [value] if isinstance(value, (dict, list)) else []
    while stack:
        item = stack.pop()
        children: Any = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in children:
            kind = type(child)
            if kind is str or kind is int or child is None or kind is bool:
                continue  # most of a response: no call spent on them
            if kind is float:
                if child - child:  # NaN for NaN and the infinities, 0.0 for every finite float
                    item[key] = None
            elif kind is dict or kind is list:
                stack.append(child)
            elif isinstance(child, float):
                if not math.isfinite(child):
                    item[key] = None
            elif isinstance(child, (dict, list)):
                stack.append(child)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# A UUID already in the form str(uuid.UUID(...)) gives: returned as it is, without parsing.
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def validate_uuid(value: Any, field: str = "memory_id") -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{field} must be a valid UUID")
    if _CANONICAL_UUID.fullmatch(value):
        return value
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise ValidationError(f"{field} must be a valid UUID") from None


def validate_timestamp(value: Any, field: str) -> str | None:
    """An ISO 8601 / datetime / epoch value as a UTC ISO string; None stays None."""
    if value is None:
        return None
    return format_timestamp(parse_timestamp(value, field=field))


def validate_embedding(value: Any, dimensions: int | None) -> bytes:
    """A finite, non-zero float vector of the store's dimension, as float32 bytes."""
    if isinstance(value, str):
        parts = [p for p in value.split(",") if p.strip()]
        try:
            value = [float(p) for p in parts]
        except ValueError:
            raise ValidationError("Embedding must contain numeric values") from None
    packed: array | None = None
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) % 4:
            raise ValidationError("Embedding bytes must be little-endian float32 values")
        packed = array("f")
        packed.frombytes(raw)
    elif hasattr(value, "dtype") and hasattr(value, "astype") and hasattr(value, "tobytes"):
        if value.dtype.kind not in "fiu":  # numpy arrays: no per-element Python work
            raise ValidationError("Embedding must contain numeric values")
        floats = value.astype("<f4").ravel()
        packed = array("f")
        packed.frombytes(floats.tobytes())
        # The norm in numpy: float64 sums of float32 squares can neither overflow nor
        # underflow (as hypot's scaling ensures below), and NaN/inf propagate.
        wide = floats.astype("<f8")
        return _check_packed(packed, dimensions, norm=math.sqrt(float(wide @ wide)))
    if packed is not None:
        return _check_packed(packed, dimensions)
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise ValidationError("Embedding must be a list of numbers")
    numeric = (int, float)
    if not all(type(item) in numeric or (isinstance(item, numeric) and not isinstance(item, bool))
               for item in value):
        raise ValidationError("Embedding must contain numeric values")
    # Check the float32 values actually stored: 1e300 becomes inf and 1e-50
    # becomes 0.0 when narrowed, which would poison every cosine.
    try:
        packed = array("f", value)
    except OverflowError:
        raise ValidationError("Embedding values must be finite numbers (within float32 range)") from None
    return _check_packed(packed, dimensions)


def _check_packed(packed: array, dimensions: int | None, norm: float | None = None) -> bytes:
    if dimensions is not None and len(packed) != dimensions:
        raise ValidationError(f"Embedding must contain exactly {dimensions} values")
    if not packed:
        raise ValidationError("Embedding must not be empty")
    # hypot works in double precision with scaling, so the norm of the float32
    # values neither overflows nor underflows; it is NaN or inf exactly when
    # some element is.
    if norm is None:
        norm = math.hypot(*packed)
    if not math.isfinite(norm):
        raise ValidationError("Embedding values must be finite numbers (within float32 range)")
    if norm == 0.0:
        raise ValidationError("Embedding must not be the zero vector")
    if not MIN_EMBEDDING_NORM <= norm <= MAX_EMBEDDING_NORM:
        raise ValidationError(
            f"Embedding norm {norm:.3g} is outside [{MIN_EMBEDDING_NORM:g}, {MAX_EMBEDDING_NORM:g}]: "
            "its cosine cannot be computed reliably in float32 (scale it, unit length is best)")
    return packed.tobytes()


def embedding_problem(blob: Any, dimensions: int) -> str | None:
    """Why a stored embedding cannot be used for search (the rule of validate_embedding), or None."""
    if not isinstance(blob, bytes):
        return "Embedding is not a float32 blob"
    try:
        validate_embedding(blob, dimensions)
    except ValidationError as exc:
        return exc.message
    return None


def validate_context_name(value: Any) -> str:
    if value is None:
        return "default"
    if not isinstance(value, str) or not value.strip():
        raise ValidationError("'context' must be a non-empty string")
    name = check_text(value.strip(), "context")
    if len(name) > MAX_CONTEXT_NAME:
        raise ValidationError(f"'context' must be at most {MAX_CONTEXT_NAME} characters")
    return name


def validate_int(value: Any, field: str, *, default: int, minimum: int, maximum: int,
                 notes: list[str] | None = None) -> int:
    """An integer parameter; non-integers are an error, out-of-range values are clamped (and
    said in ``notes`` when it is given, as recall says a capped ``limit``)."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise ValidationError(f"'{field}' must be an integer")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise ValidationError(f"'{field}' must be an integer")
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise ValidationError(f"'{field}' must be an integer") from None
    if not isinstance(value, int):
        raise ValidationError(f"'{field}' must be an integer")
    held = max(minimum, min(maximum, value))
    if held != value and notes is not None:
        side = f"below the minimum {minimum}" if value < minimum else f"above the maximum {maximum}"
        notes.append(f"'{field}' {value} is {side}; {held} was used")
    return held


def now_iso(now: datetime) -> str:
    return format_timestamp(now)


def not_current_note(record: dict[str, Any], now: datetime) -> str | None:
    """Why recall's current-state filter hides a memory just written, or None when it shows it.

    The write stands (AutoMem's rules: ``t_valid`` defaults to the timestamp, so a future timestamp
    makes a memory not yet valid); the answer says so instead of AutoMem's silence.
    """
    shows = "recall hides it (state_mode history shows it)"
    if record.get("archived"):
        return "the memory is archived: recall never returns it (get and list do)"
    t_valid = parse_timestamp(record["t_valid"], field="t_valid") if record.get("t_valid") else None
    t_invalid = parse_timestamp(record["t_invalid"], field="t_invalid") if record.get("t_invalid") else None
    if t_valid is not None and t_invalid is not None and t_valid >= t_invalid:
        return (f"the memory is never current: t_valid {format_timestamp(t_valid)} is not before t_invalid "
                f"{format_timestamp(t_invalid)}; {shows}")
    if t_valid is not None and t_valid > now:
        return (f"the memory is not current until {format_timestamp(t_valid)} (t_valid, which defaults to the "
                "timestamp): recall hides it until then (state_mode history shows it)")
    if t_invalid is not None and t_invalid <= now:
        return f"the memory expired at {format_timestamp(t_invalid)} (t_invalid): {shows}"
    return None


HIDING_FIELDS = ("timestamp", "t_valid", "t_invalid", "archived")


def batch_not_current(records: list[tuple[str, dict[str, Any]]], now: datetime, most: int = 10) -> list[str]:
    """``not_current_note`` for the items of a batch, each prefixed with where it was (``"Memory at index 3: "``);
    at most ``most`` lines, then how many more."""
    notes = [where + note for where, record in records if (note := not_current_note(record, now))]
    return notes[:most] + ([f"and {len(notes) - most} more memories recall hides"] if len(notes) > most else [])
