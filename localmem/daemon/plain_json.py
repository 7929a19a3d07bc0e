"""JSON for the hook client's fast path: the standard library's C scanner and encoder (``_json``,
what ``json.loads``/``json.dumps`` run on CPython) without importing ``json``.

``import json`` imports ``re`` (and ``enum`` with it) and compiles its patterns before the first
byte is parsed; for a hook answered by the warm process that import is a good share of the whole
run. Called the way ``json`` calls them, the C functions give the same values and the same text
(``dumps`` with ``json.dumps``'s separators and ``ensure_ascii``). Errors are ``json``'s own
(``JSONDecodeError``, a ``ValueError``; ``RecursionError`` for deep nesting; ``TypeError`` for a
value JSON cannot hold). Where ``_json`` is missing (another Python), ``json`` itself is used.
"""

from __future__ import annotations

try:
    import _json
except ImportError:  # pragma: no cover - not CPython
    _json = None  # type: ignore[assignment]

__all__ = ["dumps", "loads"]

_WHITESPACE = " \t\n\r"


class _Context:
    """What the C scanner reads from ``json.JSONDecoder`` (its defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


def _not_serializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def loads(text: str | bytes) -> object:
    """``json.loads(text)``."""
    if isinstance(text, bytes):
        if b"\x00" in text[:4] or text[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16/32: json's detection
            import json

            return json.loads(text)
        text = text.decode("utf-8-sig" if text.startswith(b"\xef\xbb\xbf") else "utf-8", "surrogatepass")
    if _json is None:  # pragma: no cover
        import json

        return json.loads(text)
    index = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _json.make_scanner(_Context())(text, index)
        complete = not text[end:].strip(_WHITESPACE)
    except RecursionError:
        raise
    except Exception:  # noqa: BLE001 - StopIteration, a decode error (or SystemError: the C
        complete = False  # scanner finds json's error class only once json is imported)
    if not complete:  # malformed: json itself says how (the import is paid on this path only)
        import json

        return json.loads(text)
    return value


def dumps(value: object, *, compact: bool = False, ensure_ascii: bool = True) -> str:
    """``json.dumps(value, ensure_ascii=...)``, with ``separators=(",", ":")`` when ``compact``."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":") if compact else None)
    encode = _json.make_encoder({}, _not_serializable,
                                _json.encode_basestring_ascii if ensure_ascii else _json.encode_basestring,
                                None, ":" if compact else ": ", "," if compact else ", ", False, False, True)
    return "".join(encode(value, 0))
