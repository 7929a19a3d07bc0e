"""The MCP server answers a request nested too deep to parse under its own id (issue 12, item 6).

Found by ``benchmarks/attacks/attacks.py``: a ``tools/call`` whose arguments are nested
more deeply than the SDK's parser goes (about 255 levels; a JavaScript client
sends such a line without complaint) was answered with a parse error whose id
was null, so the client never got an answer to its request.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from tests.test_hostile_values import Pipe, call  # noqa: E402


def deep_call(request_id: int, depth: int) -> bytes:
    metadata = b'{"a":' * depth + b"1" + b"}" * depth
    return call(request_id, b"store_memory", b'{"content":"deep","metadata":' + metadata + b"}")


def test_a_request_nested_too_deep_is_answered_under_its_id(tmp_path: Path) -> None:
    pipe = Pipe(tmp_path / "memory.db")
    try:
        pipe.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}).encode())
        assert pipe.answer(30)["id"] == 1
        pipe.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        for request_id, depth in ((2, 300), (3, 100_000)):
            started = time.monotonic()
            pipe.send(deep_call(request_id, depth))
            reply = pipe.answer()
            assert time.monotonic() - started < 5
            assert reply["id"] == request_id, reply
            assert reply["error"]["code"] == -32600 and "nested deeper than" in reply["error"]["message"]
        # Broken beyond reading its id: a parse error, as before.
        pipe.send(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":' + b"[" * 1000)
        assert pipe.answer()["id"] is None
        pipe.send(call(5, b"store_memory", b'{"content":"a fine memory"}'))
        fine = pipe.answer(15)
        assert fine["id"] == 5 and fine["result"]["isError"] is False
    finally:
        stderr = pipe.close()
    assert "Traceback" not in stderr, stderr[-3000:]


def test_shallow_json_keeps_only_the_top_level() -> None:
    from localmem.validation import shallow_json

    text = '{"id": 7, "params": {"a": [1, {"b": "]} not a bracket"}]}, "method": "x"}'
    assert json.loads(shallow_json(text)) == {"id": 7, "params": None, "method": "x"}
    assert shallow_json("[1, [2, [3]]]") == "[1, null]"
    assert shallow_json('"just a string"') == '"just a string"'
    deep = '{"id": "r", "p": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert json.loads(shallow_json(deep)) == {"id": "r", "p": None}
    with pytest.raises(ValueError):
        json.loads(shallow_json('{"id": 1, "p": [[[['))  # still broken
