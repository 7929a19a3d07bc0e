"""Numerically and textually hostile values (issue 12, items 4, 6 and 7).

- vectors whose float32 cosine cannot be computed (denormals, norms whose
  squares underflow or overflow float32) are refused as stored and as query
  embeddings, in every form (list, raw float32 bytes, numpy array);
- a damaged vector already on disk never puts NaN or infinity into a
  response: Python, HTTP, MCP (format=json) or the CLI's --json;
- the MCP server answers every request, lone surrogate escapes and invalid
  UTF-8 included, through the SDK's client and over a raw pipe;
- lone surrogates in recall_v1 filters, thousand-digit numbers in time
  expressions and deeply nested JSON are 4xx errors naming the field, never
  500s or tracebacks.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import select
import subprocess
import sys
import time
from array import array
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from localmem import MemoryStore, ValidationError
from tests.store_helpers import FIXED_NOW, snapshot

REPO = Path(__file__).resolve().parents[1]
DIMS = 384
BIN = Path(sys.executable).parent
WORDS = ("cats", "dogs", "redis", "cache", "postgres", "index", "alpha", "beta", "tabs", "spaces")


def unit(seed: int) -> list[float]:
    rng = random.Random(seed)
    raw = [rng.gauss(0.0, 1.0) for _ in range(DIMS)]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]


def strict_json(value: Any) -> str:
    """The value as strict JSON (raises on NaN, infinity or lone surrogates)."""
    text = json.dumps(value, allow_nan=False)
    text.encode("utf-8")
    return text


def plant_vector(db: MemoryStore | Path, memory_id: str, values: list[float]) -> None:
    """Overwrite a memory's stored embedding the way an older localmem could have written it
    (one that wrote no token codes either)."""
    import apsw

    blob = array("f", values).tobytes()
    conn = db.conn if isinstance(db, MemoryStore) else apsw.Connection(str(db))
    conn.execute("UPDATE memory_embeddings SET embedding = ? "
                 "WHERE pk = (SELECT pk FROM memories WHERE id = ?)", (blob, memory_id))
    conn.execute("DELETE FROM token_codes WHERE pk = (SELECT pk FROM memories WHERE id = ?)", (memory_id,))
    if not isinstance(db, MemoryStore):
        conn.close()


def filled(store: MemoryStore, count: int = 30) -> list[str]:
    return store.store_many([{"content": f"memory {i} about {WORDS[i % 10]} and {WORDS[(i * 3) % 10]}",
                              "tags": [WORDS[i % 4]]} for i in range(count)])


@pytest.fixture
def store() -> MemoryStore:
    s = MemoryStore(":memory:", embedder="hash", clock=lambda: FIXED_NOW)
    yield s
    s.close()


# -- item 4: the vector rule ------------------------------------------------------------------------

DENORMALS = [1e-40] * DIMS            # float32 subnormals: the float32 norm is 0, the cosine +-inf
UNDERFLOWING = [1e-20] * DIMS         # normal float32 values whose squares are subnormal
OVERFLOWING = [1e18] * DIMS           # the float32 sum of squares overflows to inf


@pytest.mark.parametrize("form", ["list", "bytes", "numpy", "text"])
@pytest.mark.parametrize("values", [DENORMALS, UNDERFLOWING, OVERFLOWING,
                                    [x * 1e-7 for x in unit(1)], [x * 1e7 for x in unit(2)]],
                         ids=["denormals", "squares-underflow", "squares-overflow", "norm-1e-7", "norm-1e7"])
def test_vectors_float32_cannot_normalise_are_refused_in_every_form(store, form, values):
    if form == "bytes":
        value: Any = array("f", values).tobytes()
    elif form == "numpy":
        value = pytest.importorskip("numpy").array(values, dtype="float32")
    elif form == "text":
        value = ",".join(repr(v) for v in values)
    else:
        value = values
    filled(store, 3)
    before = snapshot(store)
    with pytest.raises(ValidationError, match="Embedding norm"):
        store.store("a memory with a hostile vector", embedding=value)
    with pytest.raises(ValidationError, match="Embedding norm"):
        store.recall("memory", embedding=value)
    assert snapshot(store) == before


def test_norms_inside_the_bounds_are_accepted_and_exact(store):
    filled(store, 5)
    for scale, seed in ((1e-5, 3), (1.0, 4), (1e5, 5)):
        vector = [x * scale for x in unit(seed)]
        memory_id = store.store(f"scaled by {scale}", embedding=vector)
        top = store.recall(embedding=[x / scale for x in vector], limit=1)["results"][0]
        assert top["id"] == memory_id
        assert top["score_components"]["vector"] == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValidationError, match="Embedding norm"):
        store.store("just below", embedding=[x * 9e-7 for x in unit(6)])


def test_update_refuses_a_denormal_vector(store):
    memory_id = filled(store, 1)[0]
    before = snapshot(store)
    with pytest.raises(ValidationError, match="Embedding norm"):
        store.update(memory_id, embedding=DENORMALS)
    assert snapshot(store) == before


# -- item 4: a damaged vector already on disk --------------------------------------------------------


def test_damaged_vector_on_disk_never_makes_a_recall_non_finite(store):
    ids = filled(store)
    bad = store.store("tiny vector memory about cats")
    plant_vector(store, bad, DENORMALS)
    rng = random.Random(12)
    for _ in range(60):
        query = " ".join(rng.sample(WORDS, 2))
        response = store.recall(query, limit=10)
        strict_json(response)
        for result in response["results"]:
            if result["id"] == bad:
                assert result["score_components"]["vector"] == 0.0
        strict_json(store.recall_v1(query, k=10))
    strict_json(store.recall(embedding=unit(7), limit=30))
    assert len(ids) == 30


@pytest.mark.parametrize("values", [DENORMALS, [1e-30] * DIMS],
                         ids=["denormals", "squares-vanish"])
def test_damaged_vector_is_no_evidence_for_any_search_mode(store, values):
    """A stored vector whose float32 norm is 0 (its cosine +-inf) counts as no cosine at all."""
    filled(store, 10)
    bad = store.store("cats cats cats")
    plant_vector(store, bad, values)
    for mode in ("hybrid", "semantic", "keyword"):
        response = store.recall_v1("cats", k=20, search_mode=mode)
        strict_json(response)
        for row in response["results"]:
            if row["memory_id"] == bad:
                assert row["score_components"]["cosine"] is None
    strict_json(store.recall("cats", limit=20, expand_relations=True))


def test_stored_numbers_damaged_on_disk_are_stripped_from_records(store):
    memory_id = filled(store, 2)[0]
    store.conn.execute("UPDATE memories SET importance = 9e999, confidence = -9e999 WHERE id = ?", (memory_id,))
    record = store.get(memory_id)
    assert record["importance"] is None and record["confidence"] is None
    strict_json(store.by_tag([WORDS[0]]))
    strict_json(store.recall("memory about cats", limit=5))


def test_the_response_guard_strips_every_non_finite_float_and_keeps_the_rest():
    """strip_non_finite's fast path (exact floats) and its slow one (float subclasses) agree;
    containers it does not walk (tuples) and finite extremes are left as they are."""
    from localmem.validation import strip_non_finite

    class Measured(float):
        pass

    nan, inf = float("nan"), float("inf")
    response = {"a": nan, "b": [1.0, inf, {"c": -inf, "d": Measured(nan), "e": Measured(2.0)}],
                "f": {"g": Measured(-inf)}, "h": (nan,), "i": True, "j": -0.0, "k": 1.7976931348623157e308,
                "l": 5e-324, "m": "NaN", "n": None, "o": 3}
    stripped = strip_non_finite(response)
    assert stripped is response
    assert response["a"] is None and response["b"][1] is None and response["b"][2]["c"] is None
    assert response["b"][2]["d"] is None and response["f"]["g"] is None
    assert response["b"][0] == 1.0 and response["b"][2]["e"] == 2.0 and math.isnan(response["h"][0])
    assert math.copysign(1.0, response["j"]) == -1.0 and response["k"] == 1.7976931348623157e308
    assert response["l"] == 5e-324 and response["m"] == "NaN" and response["i"] is True and response["o"] == 3
    assert strip_non_finite(nan) is None and strip_non_finite([-inf]) == [None]


@pytest.fixture
def http(store):
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from localmem.http.app import create_app

    with TestClient(create_app(store), base_url="http://localhost", raise_server_exceptions=False) as client:
        yield client


def test_http_recall_over_a_damaged_vector_and_with_a_denormal_query(store, http):
    filled(store)
    bad = store.store("tiny vector memory about cats")
    plant_vector(store, bad, DENORMALS)
    for query in ("cats dogs", "redis cache", "tiny vector"):
        response = http.get("/recall", params={"query": query, "limit": 10})
        assert response.status_code == 200, response.text[:300]
        strict_json(response.json())
        response = http.post("/api/v1/memory/recall", json={"query": query, "k": 10})
        assert response.status_code == 200, response.text[:300]
    response = http.get("/recall", params={"query": "cats", "embedding": ",".join(["1e-40"] * DIMS)})
    assert response.status_code == 400 and "Embedding norm" in response.json()["message"]
    response = http.post("/memory", json={"content": "denormal", "embedding": DENORMALS})
    assert response.status_code == 400 and "Embedding norm" in response.json()["message"]


def test_mcp_json_format_over_a_damaged_vector(store):
    pytest.importorskip("mcp")
    from localmem.mcp_server.handlers import call_tool

    filled(store)
    bad = store.store("tiny vector memory about cats")
    plant_vector(store, bad, DENORMALS)
    output = call_tool(lambda: store, "recall_memory", {"query": "tiny vector cats", "format": "json",
                                                        "limit": 10})
    assert not output.is_error, output.texts
    for text in output.texts:
        assert "Infinity" not in text and "NaN" not in text
        json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the MCP output"))
    strict_json(output.structured)


def run_cli(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("LOCALMEM_DB", None)
    return subprocess.run([sys.executable, "-m", "localmem", *args], input=stdin, capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=timeout)


def test_cli_json_recall_over_a_damaged_vector(tmp_path):
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as s:
        filled(s, 10)
        bad = s.store("tiny vector memory about cats")
    plant_vector(db, bad, DENORMALS)
    run = run_cli("--db", str(db), "--json", "recall", "tiny vector cats", "--limit", "5")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    body = json.loads(run.stdout, parse_constant=lambda name: pytest.fail(f"{name} in the CLI output"))
    assert any(r["id"] == bad for r in body["results"])


# -- item 7: lone surrogates in recall_v1 filters, huge numbers in time expressions ---------------------


@pytest.mark.parametrize("filters", [{"tags": ["\ud800"]}, {"tags": "ok,\udfff"}, {"type": ["\ud800"]}])
def test_recall_v1_filter_with_a_lone_surrogate_names_the_field(store, filters):
    filled(store, 3)
    with pytest.raises(ValidationError) as raised:
        store.recall_v1("memory", filters=filters)
    assert raised.value.code == 422 and "filters." in raised.value.message
    assert "lone surrogate" in raised.value.message
    strict_json(raised.value.to_dict())


def test_http_recall_v1_filter_with_a_lone_surrogate_is_not_a_500(store, http):
    filled(store, 3)
    body = b'{"query": "memory", "filters": {"tags": ["\\ud800"]}}'
    response = http.post("/api/v1/memory/recall", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text[:300]
    assert "filters.tags" in response.json()["message"]


HUGE_DAYS = "last " + "9" * 5000 + " days"


def test_time_expression_with_thousands_of_digits_is_all_time(store, http):
    ids = filled(store, 3)
    response = store.recall("memory", time_query=HUGE_DAYS, limit=10)
    assert {r["id"] for r in response["results"]} == set(ids)
    assert response["time_window"]["start"].startswith("0001-01-01")
    zeros = store.recall("memory", time_query="last " + "0" * 5000 + "1 days", now=FIXED_NOW)
    assert zeros["time_window"]["start"].startswith("2024-04-30")
    reply = http.get("/recall", params={"query": "memory", "time_query": HUGE_DAYS})
    assert reply.status_code == 200, reply.text[:300]


def test_mcp_and_cli_time_expression_with_thousands_of_digits(store, tmp_path):
    pytest.importorskip("mcp")
    from localmem.mcp_server.handlers import call_tool

    filled(store, 3)
    output = call_tool(lambda: store, "recall_memory", {"query": "memory", "time_query": HUGE_DAYS})
    assert not output.is_error, output.texts
    db = tmp_path / "memory.db"
    with MemoryStore(db, embedder="hash") as s:
        filled(s, 2)
    run = run_cli("--db", str(db), "recall", "memory", "--time-query", HUGE_DAYS)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr[-2000:]


# -- item 6: the MCP server answers every request --------------------------------------------------------


def mcp_command(db: Path) -> list[str]:
    return [sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "mcp"]


class RawStdio:
    """A client transport for the SDK's ``Client`` that writes JSON the way JavaScript does.

    ``json.dumps`` escapes a lone surrogate as ``\\ud800`` (valid JSON), where
    the SDK's own client cannot encode it at all.
    """

    def __init__(self, command: list[str]) -> None:
        self.command = command

    @asynccontextmanager
    async def _streams(self):
        import anyio
        import mcp.types as types
        from mcp.shared.message import SessionMessage

        env = {**os.environ, "PYTHONPATH": str(REPO)}
        process = await anyio.open_process(self.command, env=env, cwd=str(REPO))
        to_client_send, to_client = anyio.create_memory_object_stream(0)
        to_server, to_server_receive = anyio.create_memory_object_stream(0)

        async def read() -> None:
            buffer = b""
            async with to_client_send:
                async for chunk in process.stdout:
                    buffer += chunk
                    while b"\n" in buffer:
                        line, buffer = buffer.split(b"\n", 1)
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        await to_client_send.send(SessionMessage(message))

        async def write() -> None:
            async with to_server_receive:
                async for item in to_server_receive:
                    data = item.message.model_dump(mode="json", by_alias=True, exclude_unset=True)
                    await process.stdin.send((json.dumps(data) + "\n").encode("ascii"))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            try:
                yield to_client, to_server
            finally:
                await process.stdin.aclose()
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                tasks.cancel_scope.cancel()

    async def __aenter__(self):
        self._cm = self._streams()
        return await self._cm.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._cm.__aexit__(*exc)


def test_mcp_sdk_client_gets_an_error_result_for_lone_surrogates(tmp_path):
    pytest.importorskip("mcp")
    from mcp import Client

    async def session() -> list[Any]:
        async with Client(RawStdio(mcp_command(tmp_path / "memory.db")), mode="legacy",
                          read_timeout_seconds=15) as client:
            results = [await client.call_tool("store_memory", {"content": "lone \ud800"}),
                       await client.call_tool("store_memory", {"content": "ok", "tags": ["\udfff"]}),
                       await client.call_tool("recall_memory", {"query": "lone \ud800"}),
                       await client.call_tool("\ud800", {})]
            results.append(await client.call_tool("store_memory", {"content": "a fine memory"}))
            return results

    content, tags, recall, unknown, fine = asyncio.run(asyncio.wait_for(session(), 90))
    assert content.is_error and "'content'" in content.content[0].text
    assert "lone surrogate" in content.content[0].text
    assert tags.is_error and "Tags" in tags.content[0].text and "lone surrogate" in tags.content[0].text
    assert recall.is_error and "'query'" in recall.content[0].text
    assert unknown.is_error and "Unknown tool" in unknown.content[0].text
    assert not fine.is_error and fine.structured_content["memory_id"]


class Pipe:
    """``localmem mcp`` on raw pipes."""

    def __init__(self, db: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(mcp_command(db), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, cwd=REPO)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, timeout: float = 5.0) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        assert ready, f"no answer within {timeout} s"
        return json.loads(self.process.stdout.readline())

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return self.process.stderr.read().decode("utf-8", "replace")


def call(request_id: int, name: bytes, arguments: bytes) -> bytes:
    """A tools/call line, byte for byte as given (escapes and raw bytes included)."""
    return (b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
            % (request_id, name, arguments))


def test_mcp_raw_pipe_every_request_is_answered_within_seconds(tmp_path):
    pipe = Pipe(tmp_path / "memory.db")
    try:
        pipe.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}).encode())
        assert pipe.answer(30)["id"] == 1  # the first answer waits for the interpreter to start
        pipe.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        tool_errors = {
            2: (call(2, b"store_memory", b'{"content":"lone \\ud800"}'), "'content'"),
            3: (call(3, b"store_memory", b'{"content":"ok","tags":["\\ud800"]}'), "Tags"),
            4: (call(4, b"store_memory", b'{"content":"x","metadata":{"k":"\\udc00"}}'), "'metadata'"),
            5: (call(5, b"store_memory", b'{"content":"invalid UTF-8 \xff"}'), "'content'"),
            6: (call(6, b"\\ud800", b"{}"), "Unknown tool"),
        }
        for request_id, (line, field) in tool_errors.items():
            started = time.monotonic()
            pipe.send(line)
            reply = pipe.answer()
            assert time.monotonic() - started < 5
            assert reply["id"] == request_id and reply["result"]["isError"] is True, reply
            assert field in reply["result"]["content"][0]["text"], reply
        pipe.send(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":"not an object"}')
        reply = pipe.answer()
        assert reply["id"] == 7 and reply["error"]["code"] == -32600, reply
        for garbage in (b"not json at all", b"[" * 100_000, b'{"jsonrpc":"2.0","id":8,"method":'):
            pipe.send(garbage)
            reply = pipe.answer()
            assert reply["id"] is None and reply["error"]["code"] == -32700, reply
        pipe.send(call(9, b"check_database_health", b"{}"))
        assert pipe.answer(15)["result"]["isError"] is False
    finally:
        stderr = pipe.close()
    assert "Traceback" not in stderr, stderr[-3000:]


# -- item 4: doctor finds unusable embeddings in existing files, and repairs them -----------------------


def damaged_file(tmp_path: Path, name: str) -> tuple[Path, list[str]]:
    db = tmp_path / name
    with MemoryStore(db, embedder="hash") as s:
        ids = filled(s, 6)
    for memory_id, values in zip(ids, (DENORMALS, UNDERFLOWING, [float("nan")] * DIMS)):
        plant_vector(db, memory_id, values)
    return db, ids[:3]


def checks_by_name(report: dict[str, Any], key: str = "checks") -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report[key]}


def test_doctor_reports_unusable_embeddings_and_repair_re_embeds_them(tmp_path):
    db, damaged = damaged_file(tmp_path, "memory.db")
    run = run_cli("--db", str(db), "--json", "doctor")
    assert run.returncode == 1, run.stderr[-2000:]
    unusable = checks_by_name(json.loads(run.stdout))["embeddings_unusable"]
    assert unusable["count"] == 3 and set(unusable["sample"]) == set(damaged)
    assert "Embedding" in unusable["message"]

    run = run_cli("--db", str(db), "--json", "doctor", "--repair")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["repair"]["unusable_embeddings_reembedded"] == 3
    assert report["repair"]["unusable_embeddings_dropped"] == 0
    assert checks_by_name(report, "after_repair")["embeddings_unusable"]["ok"]
    with MemoryStore(db, embedder="hash") as s:
        for memory_id in damaged:  # each finds itself again by its own content
            top = s.recall(s.get(memory_id)["content"], limit=1)["results"][0]
            assert top["id"] == memory_id and top["score_components"]["vector"] > 0.99


def test_doctor_repair_without_an_embedder_drops_unusable_embeddings(tmp_path):
    db, damaged = damaged_file(tmp_path, "memory.db")
    run = run_cli("--db", str(db), "--embedder", "none", "doctor", "--repair")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "dropped, served without a vector: 3" in run.stdout
    with MemoryStore(db, embedder="hash") as s:
        assert s.health()["memories_without_embedding"] == 3
        response = s.recall("memory about cats", limit=10)
        strict_json(response)
        assert set(damaged) & {r["id"] for r in response["results"]}  # still found by keywords


# -- item 7: deeply nested JSON on the command line and in an import file ---------------------------------


def test_import_of_a_line_nested_100000_deep_names_the_line(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps({"kind": "memory", "content": "fine"}) + "\n"
                    + '{"kind": "memory", "content": "deep", "metadata": ' + '{"a": ' * 100_000 + "1"
                    + "}" * 100_001 + "\n", encoding="utf-8")
    db = tmp_path / "memory.db"
    run = run_cli("--db", str(db), "--embedder", "hash", "import", str(path))
    assert run.returncode == 2, run.stderr[-2000:]
    assert "line 2: invalid JSON: nested deeper than" in run.stderr
    assert "Traceback" not in run.stderr
    with MemoryStore(db, embedder="hash") as s:
        assert s.health()["memory_count"] == 0  # the chunk holding the bad line is not written


def test_store_metadata_nested_deep_is_a_usage_error(tmp_path):
    db = tmp_path / "memory.db"
    run = run_cli("--db", str(db), "--embedder", "hash", "store", "deep metadata",
                  "--metadata", "[" * 50_000 + "]" * 50_000)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "'--metadata' is not valid JSON: nested deeper than" in run.stderr
    assert "Traceback" not in run.stderr


def test_mcp_answers_requests_sent_before_the_client_closes_stdin(tmp_path):
    """``printf '...' | localmem mcp``: every request written before end of input is answered."""
    lines = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                 "protocolVersion": "2025-06-18", "capabilities": {},
                 "clientInfo": {"name": "raw", "version": "0"}}}).encode(),
             b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
             call(2, b"check_database_health", b"{}"),
             call(3, b"store_memory", b'{"content":"lone \\ud800"}'),
             call(4, b"store_memory", b'{"content":"a memory stored from a pipe"}')]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(mcp_command(tmp_path / "memory.db"), input=b"\n".join(lines) + b"\n",
                          capture_output=True, env=env, cwd=REPO, timeout=90)
    replies = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert set(replies) == {1, 2, 3, 4}, done.stderr.decode()[-2000:]
    assert replies[3]["result"]["isError"] and not replies[4]["result"]["isError"]


@pytest.mark.parametrize("value", [2**63, -2**63 - 1, 10**30, [1, {"deep": 2**64}]])
def test_metadata_integers_past_64_bits_are_refused_as_every_json_reader_here_refuses_them(store, value):
    """The Python API (and the MCP tools, whose arguments the SDK parses) took an integer past 64 bits
    that every JSON reader of localmem refuses: the store's export then failed to import anywhere."""
    with pytest.raises(ValidationError, match=r"'metadata' integers must fit in 64 bits \(at metadata\.n"):
        store.store("a note", metadata={"n": value})
    memory_id = store.store("a note")
    with pytest.raises(ValidationError, match="64 bits"):
        store.update(memory_id, metadata={"n": value})
    assert store.get(memory_id)["metadata"] == {}


def test_metadata_integers_at_the_64_bit_bounds_export_and_import_back(tmp_path):
    db, exported, copy = tmp_path / "a.db", tmp_path / "a.jsonl", tmp_path / "b.db"
    with MemoryStore(db, embedder="hash") as s:
        memory_id = s.store("bounds", metadata={"max": 2**63 - 1, "min": -2**63})
    assert run_cli("--db", str(db), "--embedder", "hash", "export", str(exported)).returncode == 0
    run = run_cli("--db", str(copy), "--embedder", "hash", "import", str(exported))
    assert run.returncode == 0, run.stderr[-2000:]
    with MemoryStore(copy, embedder="hash") as s:
        assert s.get(memory_id)["metadata"] == {"max": 2**63 - 1, "min": -2**63}
