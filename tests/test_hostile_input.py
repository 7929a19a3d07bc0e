"""Hostile input, property-based (hypothesis): zero crashes, zero 500s, every rejection a 400-class
``LocalMemError`` of the contract, and stored data unchanged after every rejected call.

Covers ``store``, ``store_many``, ``update``, ``recall``, ``recall_v1`` (when the store has it),
``associate``, ``by_tag``, ``related`` and the HTTP routes' query strings, paths and bodies:
FTS5 syntax, NUL bytes, lone surrogates, emoji and right-to-left text, 1 MB strings, NaN / inf /
wrong-length vectors, huge and negative limits and offsets, deeply nested metadata, unparseable
timestamps, unknown enum values.

``LOCALMEM_FUZZ_EXAMPLES`` sets the examples per property (default 60; the benchmark
``benchmarks/safety/hostile_input.py`` runs thousands).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from localmem import LocalMemError, MemoryStore
from tests.store_helpers import FIXED_NOW, snapshot

EXAMPLES = int(os.environ.get("LOCALMEM_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get("LOCALMEM_FUZZ_RANDOM"),
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])
DIMS = 384
MEGABYTE = "x" * 1_000_000

# -- strategies ----------------------------------------------------------------------------------------

FTS_FRAGMENTS = ['"', '""', "'", "NEAR(", "NEAR(a b, 2)", "*", "-", ":", "(", ")", "AND", "OR", "NOT",
                 "^", "+", "content:", "tags:x", "{a b}", "a*", "-x", "\\", "%", "_", ";", "--", "/*",
                 "DROP TABLE memories;", "' OR 1=1 --", "\x00", "\ud800", "\udfff", "🧠", "👩‍💻", "שלום עולם",
                 "مرحبا", "\u202e", "\u200f", "\ufeff", "\u0000x", "ｆｕｌｌ", "ß", "İ", "\r\n", "\t", " ",
                 "redis", "cache", "postgres", "%s", "{0}", "${x}", "../../etc/passwd", "null", "NaN",
                 "Infinity", "-1", "1e309", "0x10", "true"]
hostile_char = st.one_of(st.characters(), st.characters(categories=["Cs"]),
                         st.sampled_from(["\x00", "\u202e", "🧠", "ש", "\ufffe", "\uffff"]))
hostile_text = st.one_of(
    st.text(hostile_char, max_size=40),
    st.lists(st.sampled_from(FTS_FRAGMENTS), max_size=8).map(" ".join),
    st.lists(st.sampled_from(FTS_FRAGMENTS), max_size=8).map("".join),
    st.sampled_from(["", " ", MEGABYTE, "a" * 2001, "a" * 10_001, "\x00" * 10]),
)
hostile_number = st.one_of(
    st.integers(), st.integers(min_value=-2**70, max_value=2**70), st.floats(),
    st.sampled_from([0, -1, 1, 2**31, 2**63, -2**63, 10**30, float("nan"), float("inf"), -float("inf"), 1e-320,
                     True, False]),
    st.sampled_from(["1", "-1", "0", "1e309", "NaN", "inf", "-0", "0x10", "1_000", " 5 ", "", "five", "10" * 50]),
)
hostile_scalar = st.one_of(st.none(), st.booleans(), hostile_number, hostile_text)
hostile_json = st.recursive(
    hostile_scalar,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(hostile_text, children, max_size=4)),
    max_leaves=12,
)


class Deep(dict):
    """Deeply nested metadata that hypothesis can print without recursing into it."""

    def __repr__(self) -> str:
        return f"<{self.depth} levels of nesting>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def nested(depth: int) -> Deep:
    value: Any = "leaf"
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    deep = Deep(k=value)
    deep.depth = depth + 1  # type: ignore[attr-defined]
    return deep


hostile_metadata = st.one_of(
    hostile_json,
    st.integers(0, 200).map(nested),
    st.just({"big": MEGABYTE}),
    st.dictionaries(hostile_text, hostile_json, max_size=3),
)
hostile_vector = st.one_of(
    st.lists(st.floats(width=32), min_size=DIMS, max_size=DIMS),
    st.lists(st.floats(), min_size=0, max_size=5),
    st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=DIMS - 1, max_size=DIMS + 1),
    st.just([0.0] * DIMS), st.just([float("nan")] * DIMS), st.just([1e39] * DIMS),
    st.just([1.0] * (DIMS - 1) + [float("inf")]), st.just(["1"] * DIMS), st.just([True] * DIMS),
    st.just([[1.0]] * DIMS), st.just({"0": 1.0}), st.just("1," * DIMS), st.just(""),
    hostile_scalar,
)
hostile_timestamp = st.one_of(
    hostile_scalar,
    st.sampled_from(["2024-13-45", "2024-02-30T25:61:61", "yesterday-ish", "0000-00-00", "9999-12-31T23:59:59Z",
                     "-0001-01-01", "1970-01-01T00:00:00+25:00", "2024-01-01T00:00:00+00:00", "@" * 100,
                     "2024-01-01T00:00:00.9999999999Z", "last 99999999999 days", "today", "epoch"]),
    st.floats(), st.integers(min_value=-2**63, max_value=2**63),
)
enum_value = st.one_of(hostile_text, hostile_scalar,
                       st.sampled_from(["Decision", "decision", "DECISION", "Memory", "MetaPattern", "Unknown",
                                        "RELATES_TO", "relates_to", "INVALIDATED_BY", "SUPERSEDES", "any", "all",
                                        "prefix", "exact", "current", "history", "time_desc", "score", "on",
                                        "off", "auto"]))
hostile_tags = st.one_of(hostile_scalar, st.lists(hostile_text, max_size=5), st.lists(hostile_scalar, max_size=3),
                         st.just(["t"] * 1000), st.just([MEGABYTE]))

STORE_FIELDS = {
    "tags": hostile_tags, "importance": hostile_number, "confidence": hostile_number, "type": enum_value,
    "timestamp": hostile_timestamp, "metadata": hostile_metadata, "embedding": hostile_vector,
    "t_valid": hostile_timestamp, "t_invalid": hostile_timestamp, "id": hostile_text, "context": hostile_text,
    "updated_at": hostile_timestamp, "last_accessed": hostile_timestamp, "archived": hostile_scalar,
    "summary": hostile_text, "relevance_score": hostile_number, "bogus_field": hostile_scalar,
}
RECALL_PARAMS = {
    "queries": st.one_of(hostile_text, st.lists(hostile_text, max_size=4)), "embedding": hostile_vector,
    "limit": hostile_number, "sort": enum_value, "tags": hostile_tags, "exclude_tags": hostile_tags,
    "tag_mode": enum_value, "tag_match": enum_value, "time_query": hostile_text, "start": hostile_timestamp,
    "end": hostile_timestamp, "context": hostile_text, "language": hostile_text, "active_path": hostile_text,
    "context_tags": hostile_tags, "context_types": hostile_tags, "priority_ids": hostile_tags,
    "expand_relations": hostile_scalar, "expand_entities": hostile_scalar, "relation_limit": hostile_number,
    "expansion_limit": hostile_number, "expand_min_importance": hostile_number,
    "expand_min_strength": hostile_number, "expand_respect_tags": hostile_scalar, "state_mode": enum_value,
    "current_only": hostile_scalar, "state_debug": hostile_scalar, "recency_bias": enum_value,
    "scope_fallback": hostile_scalar, "min_score": hostile_number, "adaptive_floor": hostile_scalar,
    "auto_decompose": hostile_scalar, "per_query_limit": hostile_number, "now": hostile_timestamp,
    "order_by": enum_value, "unknown_param": hostile_scalar,
}


def some_of(fields: dict[str, st.SearchStrategy[Any]], max_fields: int = 4) -> st.SearchStrategy[dict[str, Any]]:
    return st.lists(st.sampled_from(sorted(fields)), max_size=max_fields, unique=True).flatmap(
        lambda names: st.fixed_dictionaries({name: fields[name] for name in names}))


# -- the contract ----------------------------------------------------------------------------------------


def assert_json_clean(value: Any) -> None:
    """Results must serialise as strict JSON: no NaN or infinity, no lone surrogates."""
    json.dumps(value, allow_nan=False).encode("utf-8")


def call_checked(store: MemoryStore, call: Callable[[], Any]) -> tuple[bool, Any]:
    """(accepted, result). A rejection must be a 4xx LocalMemError that changed nothing."""
    before = snapshot(store)
    try:
        result = call()
    except LocalMemError as exc:
        assert 400 <= exc.code < 500, (exc.code, exc.message)
        assert isinstance(exc.message, str) and exc.message
        assert_json_clean(exc.to_dict())
        assert snapshot(store) == before, "a rejected call changed stored data"
        return False, exc
    return True, result


@pytest.fixture(scope="module")
def store() -> MemoryStore:
    s = MemoryStore(":memory:", embedder="hash", clock=lambda: FIXED_NOW)
    ids = s.store_many([
        {"content": "Chose Redis for the session cache", "tags": ["project:alpha", "db"]},
        {"content": "Postgres index on created_at fixed the slow dashboard", "tags": ["db"],
         "metadata": {"entities": {"people": ["Alice"]}}},
        {"content": "Alice prefers tabs over spaces", "type": "Preference"},
        {"content": "שלום — a note in Hebrew and English 🧠", "tags": ["i18n"]},
    ])
    s.associate(ids[0], ids[1], "RELATES_TO")
    s.seed_ids = ids  # type: ignore[attr-defined]
    yield s
    s.close()


def existing(store: MemoryStore, index: int) -> str:
    return store.seed_ids[index % len(store.seed_ids)]  # type: ignore[attr-defined]


# -- the Python API ----------------------------------------------------------------------------------------


@FUZZ
@given(content=hostile_text, fields=some_of(STORE_FIELDS))
@example(content=MEGABYTE, fields={})
@example(content="ok", fields={"metadata": nested(500)})
@example(content="ok", fields={"embedding": [float("nan")] * DIMS})
@example(content="ok", fields={"timestamp": "2024-99-99"})
@example(content="ok", fields={"type": "NotAType"})
def test_store(store, content, fields):
    accepted, memory_id = call_checked(store, lambda: store.store(content, **fields))
    if accepted:
        record = store.get(memory_id)
        assert_json_clean(record)
        store.delete(memory_id)


@FUZZ
@given(items=st.one_of(hostile_scalar, st.lists(st.one_of(hostile_scalar, some_of(
    {**STORE_FIELDS, "content": hostile_text}, 5)), max_size=4)))
def test_store_many(store, items):
    accepted, ids = call_checked(store, lambda: store.store_many(items))
    if accepted:
        for memory_id in ids:
            assert_json_clean(store.get(memory_id))
            store.delete(memory_id)


@FUZZ
@given(which=st.integers(0, 3), memory_id=st.one_of(st.none(), hostile_text), fields=some_of(
    {**STORE_FIELDS, "content": hostile_text}, 4))
def test_update(store, which, memory_id, fields):
    fields.pop("id", None)
    target = existing(store, which) if memory_id is None else memory_id
    before = store.get(existing(store, which))
    accepted, record = call_checked(store, lambda: store.update(target, **fields))
    if accepted:
        assert_json_clean(record)
        restore = {k: before[k] for k in ("content", "tags", "importance", "confidence", "type", "timestamp",
                                         "metadata", "t_valid", "updated_at", "last_accessed", "archived",
                                         "summary", "context")}
        store.update(record["id"], t_invalid=before["t_invalid"], relevance_score=before["relevance_score"],
                     **restore)


@FUZZ
@given(query=st.one_of(st.none(), hostile_text), params=some_of(RECALL_PARAMS, 5))
@example(query=MEGABYTE, params={})
@example(query='NEAR("a" b) AND (c OR -d*) NOT e:f ^g', params={"limit": "1e309"})
@example(query="redis", params={"limit": -5, "embedding": [float("inf")] * DIMS})
@example(query="redis", params={"start": "not a time", "end": 10**30})
@example(query="redis", params={"sort": "sideways", "tag_mode": "some"})
def test_recall(store, query, params):
    accepted, result = call_checked(store, lambda: store.recall(query, **params))
    if accepted:
        assert result["status"] == "success"
        assert_json_clean(result)


@pytest.mark.skipif(not hasattr(MemoryStore, "recall_v1"), reason="MemoryStore.recall_v1 not there yet")
@FUZZ
@given(query=st.one_of(st.none(), hostile_text), params=some_of({
    "k": hostile_number, "filters": hostile_json, "search_mode": enum_value, "use_rerank": hostile_scalar,
    "include_explore_hints": hostile_scalar, "include_superseded": hostile_scalar, "full": hostile_scalar,
    "now": hostile_timestamp}, 4))
def test_recall_v1(store, query, params):
    accepted, result = call_checked(store, lambda: store.recall_v1(query, **params))
    if accepted:
        assert_json_clean(result)


@FUZZ
@given(first=st.one_of(st.none(), st.integers(0, 3), hostile_text),
       second=st.one_of(st.none(), st.integers(0, 3), hostile_text),
       relation=enum_value, strength=st.one_of(st.none(), hostile_number),
       props=some_of({"reason": hostile_json, "observations": hostile_json, "timestamp": hostile_timestamp,
                      "role": hostile_json, "confidence": hostile_json, "bogus": hostile_scalar,
                      "context": hostile_json}, 3))
def test_associate(store, first, second, relation, strength, props):
    one = existing(store, first) if isinstance(first, int) else first
    two = existing(store, second) if isinstance(second, int) else second
    before = snapshot(store)
    accepted, result = call_checked(store, lambda: store.associate(one, two, relation, strength, **props))
    if accepted:
        assert_json_clean(result)
        # Put the edge table back as it was (an accepted call may add or change one edge).
        store.conn.execute("DELETE FROM edges")
        for row in before["edges"]:
            store.conn.execute(f"INSERT INTO edges VALUES ({', '.join('?' * len(row))})", row)


@FUZZ
@given(tags=hostile_tags, limit=st.one_of(st.none(), hostile_number), offset=st.one_of(st.none(), hostile_number),
       memory_id=st.one_of(st.integers(0, 3), hostile_text), types=st.one_of(st.none(), hostile_tags),
       depth=st.one_of(st.none(), hostile_number))
def test_by_tag_and_related(store, tags, limit, offset, memory_id, types, depth):
    accepted, result = call_checked(store, lambda: store.by_tag(tags, limit=limit, offset=offset))
    if accepted:
        assert_json_clean(result)
    target = existing(store, memory_id) if isinstance(memory_id, int) else memory_id
    accepted, result = call_checked(store, lambda: store.related(target, types, depth, limit))
    if accepted:
        assert_json_clean(result)


# -- the HTTP API ----------------------------------------------------------------------------------------

TOKEN = "fuzz-token"


@pytest.fixture(scope="module")
def http(store):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from localmem.http.app import create_app

    with TestClient(create_app(store, token=TOKEN), base_url="http://localhost", raise_server_exceptions=False,
                    headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        yield client


def check_response(store: MemoryStore, before: dict[str, Any], response: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    body = response.json()
    if response.status_code >= 400:
        assert body["status"] == "error" and body["code"] == response.status_code, body
        assert isinstance(body["message"], str) and body["message"]
        assert snapshot(store) == before, "a rejected request changed stored data"


def query_pairs() -> st.SearchStrategy[list[tuple[str, str]]]:
    names = st.one_of(st.sampled_from(sorted(RECALL_PARAMS) + ["query", "q", "tags", "limit", "offset",
                                                                "relationship_types", "max_depth", "api_key"]),
                      st.text(max_size=10))
    values = st.one_of(hostile_text.filter(lambda t: len(t) < 100_000),
                       hostile_number.map(str), st.just("%FF%FE%00"), st.just("a" * 9000))
    return st.lists(st.tuples(names, values), max_size=6)


def encode_query(pairs: list[tuple[str, str]]) -> str:
    from urllib.parse import quote

    return "&".join(f"{quote(k.encode('utf-8', 'surrogatepass'), safe='')}="
                    f"{quote(v.encode('utf-8', 'surrogatepass'), safe='')}" for k, v in pairs)


@FUZZ
@given(path=st.sampled_from(["/recall", "/memory/by-tag", "/memories/{id}/related", "/memory/{id}",
                             "/memories/{bad}/related", "/memory/{bad}"]),
       pairs=query_pairs(), bad=hostile_text.filter(lambda t: len(t) < 1000))
def test_http_query_strings_and_paths(store, http, path, pairs, bad):
    from urllib.parse import quote

    url = path.replace("{id}", existing(store, 0)).replace(
        "{bad}", quote(bad.encode("utf-8", "surrogatepass"), safe="") or "x")
    before = snapshot(store)
    response = http.get(url + "?" + encode_query(pairs))
    check_response(store, before, response)


def raw_bodies() -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=200),
        st.sampled_from([b"", b"null", b"[]", b"{", b'{"content": "\\ud800"}', b'{"content": "a\\u0000b"}',
                         b'{"content": NaN}', b'{"content": Infinity}', b'{"content": 1e999}',
                         b"\xff\xfe{}", b'{"memories": "x"}', b'{"memories": [1, 2]}',
                         b"[" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
                         b'{"content": "' + b"x" * 1_000_000 + b'"}']),
    )


@FUZZ
@given(route=st.sampled_from([("POST", "/memory"), ("POST", "/memory/batch"), ("PATCH", "/memory/{id}"),
                              ("POST", "/associate"), ("POST", "/api/v1/memory/recall")]),
       body=st.one_of(raw_bodies(), hostile_json.map(lambda v: json.dumps(v).encode()),
                      some_of({**STORE_FIELDS, "content": hostile_text, "memories": st.lists(
                          some_of({**STORE_FIELDS, "content": hostile_text}, 3), max_size=3),
                          "memory1_id": hostile_text, "memory2_id": hostile_text, "query": hostile_text,
                          "associations": st.lists(hostile_json, max_size=3), "strength": hostile_number,
                          "k": hostile_number, "filters": hostile_json}, 4).map(
                          lambda d: json.dumps(d).encode("utf-8", "surrogatepass"))))
def test_http_bodies(store, http, route, body):
    method, path = route
    url = path.replace("{id}", existing(store, 2))
    before = snapshot(store)
    response = http.request(method, url, content=body, headers={"Content-Type": "application/json"})
    check_response(store, before, response)
    if response.status_code in (200, 201, 207) and method != "POST" or path == "/api/v1/memory/recall":
        return
    if response.status_code in (201, 207):
        # Undo an accepted write so later examples start from the same data.
        data = response.json()
        for memory_id in [data.get("memory_id")] + list(data.get("memory_ids", [])):
            if memory_id and memory_id not in store.seed_ids:  # type: ignore[attr-defined]
                store.delete(memory_id)
        if path == "/associate":
            keep = before["edges"]
            store.conn.execute("DELETE FROM edges")
            for row in keep:
                store.conn.execute(f"INSERT INTO edges VALUES ({', '.join('?' * len(row))})", row)


# -- vector magnitudes (float32 underflow and overflow) ----------------------------------------------------


@FUZZ
@given(direction=st.lists(st.floats(-1.0, 1.0, width=32), min_size=DIMS, max_size=DIMS),
       exponent=st.integers(-46, 40), query=st.one_of(st.none(), hostile_text))
@example(direction=[1.0] * DIMS, exponent=-40, query="redis")
@example(direction=[0.5, -0.5] * (DIMS // 2), exponent=-20, query=None)
@example(direction=[1.0] * DIMS, exponent=18, query="cache")
def test_vector_magnitudes(store, direction, exponent, query):
    """Any accepted vector, stored or as a query, has an exact cosine: never NaN/inf in a response."""
    vector = [x * 10.0 ** exponent for x in direction]
    accepted, result = call_checked(store, lambda: store.recall(query, embedding=vector))
    if accepted:
        assert_json_clean(result)
    accepted, memory_id = call_checked(store, lambda: store.store("a vector of some magnitude", embedding=vector))
    if not accepted:
        return
    try:
        own = store.recall(embedding=vector, limit=10)
        assert_json_clean(own)
        mine = [r for r in own["results"] if r["id"] == memory_id]
        assert mine and mine[0]["score_components"]["vector"] > 0.999, own["results"][:1]
        # The query text may be refused for itself (a lone surrogate, NUL, too long): that is checked
        # as a rejection; an answer must be clean.
        for call in (lambda: store.recall(query or "redis cache", limit=10),
                     lambda: store.recall_v1(query or "redis cache", k=10)):
            answered, answer = call_checked(store, call)
            if answered:
                assert_json_clean(answer)
    finally:
        store.delete(memory_id)


# -- JSON text from outside, and the MCP wire --------------------------------------------------------------

json_texts = st.one_of(
    hostile_text,
    hostile_json.map(lambda v: json.dumps(v)),  # NaN, Infinity, lone surrogate escapes included
    st.integers(0, 3000).map(lambda n: "[" * n + "]" * n),
    st.integers(0, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.sampled_from(["[" * 100_000, '{"a":' * 50_000, "1e999", "-1e999", "9" * 5000, '"\\ud800"',
                     '"\\udfff\\ud800"', '{"a": NaN}', "[1, 2,]", '"' + "[" * 1000 + '"', "\\", '"\\"']),
)


@FUZZ
@given(text=json_texts)
def test_decode_json(text):
    from localmem.validation import MAX_JSON_DEPTH, decode_json, json_nesting

    try:
        value = decode_json(text, "field")
    except LocalMemError as exc:
        assert exc.code == 400 and "'field'" in exc.message
        return
    assert json_nesting(text) <= MAX_JSON_DEPTH
    assert value == json.loads(text)


def jsonrpc_lines() -> st.SearchStrategy[bytes]:
    short_text = hostile_text.filter(lambda t: len(t) < 300)
    short_json = st.recursive(st.one_of(st.none(), st.booleans(), hostile_number, short_text),
                              lambda children: st.one_of(st.lists(children, max_size=4),
                                                         st.dictionaries(short_text, children, max_size=4)),
                              max_leaves=12)
    ids = st.one_of(st.integers(-2**53, 2**53), st.text(max_size=8), st.none(), st.booleans(), st.floats(),
                    st.lists(st.integers(), max_size=2))
    methods = st.one_of(st.sampled_from(["tools/call", "tools/list", "initialize", "ping", "notifications/x"]),
                        short_text, st.integers())
    shaped = st.fixed_dictionaries(
        {"jsonrpc": st.sampled_from(["2.0", "1.0", 2])},
        optional={"id": ids, "method": methods, "params": st.one_of(short_json, st.fixed_dictionaries({
            "name": short_text, "arguments": short_json})), "result": short_json, "error": short_json})
    return st.one_of(
        shaped.map(lambda d: json.dumps(d).encode("ascii")),  # lone surrogates as \ud800 escapes
        shaped.map(lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass")),  # invalid UTF-8
        st.binary(max_size=300),
        st.sampled_from([b"", b"\n", b"[" * 100_000, b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"\xff"}}',
                         b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]']),
        deep_requests(),
    )


def deep_requests() -> st.SearchStrategy[bytes]:
    """A tools/call whose arguments are nested too deep to parse (benchmarks/attacks/attacks.py found those
    answered with a null id): its id is still at the top, and the answer must carry it."""
    return st.builds(lambda request_id, depth: (
        b'{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"store_memory","arguments":'
        b'{"content":"x","metadata":' % json.dumps(request_id).encode() + b'{"a":' * depth + b"1"
        + b"}" * depth + b"}}}"), st.one_of(st.integers(-2**53, 2**53), st.text(max_size=8)),
        st.integers(65, 3000))


@FUZZ
@given(line=jsonrpc_lines())
def test_mcp_wire_every_request_is_answered(line):
    """Each line is forwarded to the server or answered; a request (an id and a method) is never dropped."""
    pytest.importorskip("mcp")
    import mcp.types as types
    from mcp.shared.message import SessionMessage

    from localmem.mcp_server.transport import decode_line, encode_message
    from localmem.validation import MAX_JSON_DEPTH, json_nesting, shallow_json

    message, answer = decode_line(line)
    assert message is None or answer is None
    def strict(text: str) -> Any:
        if text in ("NaN", "Infinity", "-Infinity") or not math.isfinite(float(text)):
            raise ValueError(text)
        return float(text)

    # What the client sent, when it is strict JSON within the depth limit; otherwise the
    # answer is a parse error, whose id is null.
    text = line.decode("utf-8", "surrogateescape")
    try:
        sent = (json.loads(text, parse_constant=strict, parse_float=strict)
                if json_nesting(text) <= MAX_JSON_DEPTH else None)
    except (ValueError, RecursionError):
        sent = None
    if sent is None and json_nesting(text) > MAX_JSON_DEPTH:
        # Too deep to parse: what the client sent at the top level (the id of a request) still counts.
        try:
            sent = json.loads(shallow_json(text), parse_constant=strict, parse_float=strict)
        except ValueError:
            sent = None
    is_request = (isinstance(sent, dict) and isinstance(sent.get("id"), (int, str))
                  and not isinstance(sent.get("id"), bool) and "method" in sent)
    if is_request:
        assert message is not None or answer is not None
    if answer is not None:
        reply = json.loads(encode_message(answer).decode("utf-8"))
        assert reply["error"]["code"] in (types.PARSE_ERROR, types.INVALID_REQUEST)
        if is_request:
            assert reply["id"] == sent["id"]
    if message is not None and isinstance(message.message, types.JSONRPCRequest):
        # Whatever the request held, an answer echoing it still goes out as strict UTF-8 JSON.
        echo = SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=message.message.id,
                                                    result={"echo": message.message.params or {}}))
        json.loads(encode_message(echo).decode("utf-8"))
