"""``localmem.daemon.plain_json`` (the hook client's JSON without ``import json``) gives what
``json`` gives: the same values, the same text, the same errors, on ordinary and hostile input."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from localmem.daemon import plain_json

VALUES = [{}, [], "", 0, -1.5e300, True, None, {"a": [1, 2.5, "x\u00e9\u2603", {"b": None}], "c": False},
          "lone \ud800 surrogate", "nul \x00 and \n and \"quotes\"", {"k" * 1000: ["v"] * 1000}, 10 ** 40]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("compact", [False, True])
@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_dumps_and_loads_are_jsons(value: object, compact: bool, ensure_ascii: bool):
    text = plain_json.dumps(value, compact=compact, ensure_ascii=ensure_ascii)
    assert text == json.dumps(value, ensure_ascii=ensure_ascii, separators=(",", ":") if compact else None)
    assert plain_json.loads(text) == json.loads(text)
    raw = text.encode("utf-8", "surrogatepass")
    assert plain_json.loads(raw) == json.loads(raw)


@pytest.mark.parametrize("raw", [b" {\"a\": 1} \n", b"\xef\xbb\xbf{\"a\": 1}", '{"a": "\u00e9"}'.encode("utf-16"),
                                 '[1, "x"]'.encode("utf-32-le"), b"NaN", b"[Infinity, -Infinity]", b"1e400"])
def test_encodings_and_constants_as_json_reads_them(raw: bytes):
    got, expected = plain_json.loads(raw), json.loads(raw)
    assert json.dumps(got) == json.dumps(expected)
    if isinstance(got, float) and math.isnan(got):
        assert math.isnan(expected)


@pytest.mark.parametrize("raw", [b"", b"   ", b"{", b"[1,]", b"{\"a\": 1} x", b"\xff\xfe\xfd", b"'single'",
                                 b"{\"a\": 1}{}", b"\"\\ud800\\u\""])
def test_bad_input_raises_a_value_error_as_json_does(raw: bytes):
    with pytest.raises(ValueError):
        json.loads(raw)
    with pytest.raises(ValueError):
        plain_json.loads(raw)


def test_deep_nesting_is_a_recursion_error_and_unencodable_a_type_error():
    with pytest.raises(RecursionError):
        plain_json.loads("[" * 200_000 + "]" * 200_000)
    with pytest.raises(TypeError, match="set"):
        plain_json.dumps({"a": {1, 2}})
    with pytest.raises(ValueError, match="Circular"):
        plain_json.dumps(_circular())


def _circular() -> list:
    loop: list = []
    loop.append(loop)
    return loop


def test_bad_input_is_jsons_error_in_a_process_that_never_imported_json():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from localmem.daemon import plain_json\n"
            "for bad in (b'{not json', b'[1,]', b'{} x', b''):\n"
            "    try:\n        plain_json.loads(bad)\n"
            "    except ValueError as exc:\n        print(type(exc).__name__, exc)\n")
    done = subprocess.run([sys.executable, "-S", "-c", code, str(Path(__file__).resolve().parents[1])],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"JSONDecodeError {message}" for message in (
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        "Expecting value: line 1 column 4 (char 3)", "Extra data: line 1 column 4 (char 3)",
        "Expecting value: line 1 column 1 (char 0)")]
