"""MCP over Streamable HTTP at ``localmem serve``'s ``/mcp``, driven by the official SDK's HTTP client.

Most tests run against ``localmem serve`` started as a subprocess (hash embedder, a temporary
file): the six tools with both protocol eras (the initialize handshake and the 2026-07-28
stateless requests), memories crossing between MCP and the HTTP API, the API's token rules,
its Host/Origin guard and its body cap, and a clean stop. Two run the app in this process:
that the MCP tools use the API's own store object, and that the SDK is imported only by the
first ``/mcp`` request.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.serving import in_thread, stop, wait_until_healthy

pytest.importorskip("mcp")
pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from localmem import MemoryStore  # noqa: E402
from localmem.http.app import create_app  # noqa: E402
from localmem.request_body import MAX_BODY_BYTES  # noqa: E402
from localmem.http.server import uvicorn_config  # noqa: E402
from localmem.mcp_server.tools import TOOL_NAMES, TOOLS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ENV_NAMES = ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN", "LOCALMEM_API_TOKENS",
             "LOCALMEM_ALLOWED_HOSTS", "LOCALMEM_ALLOWED_ORIGINS", "ADMIN_API_TOKEN")
ADMIN = "mcp-admin-T0ken"
SCOPED = "mcp-scoped-T0ken"
EVIL = "http://evil.example"
MODES = ("legacy", "auto")  # the initialize handshake; server/discover, then 2026-07-28 requests
# A raw tools/call that would store a memory (handshake era, stateless: no initialize needed).
PLANT = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "store_memory", "arguments": {"content": "planted by a web page"}}}
RAW_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def local_serve(path: Path, **env_vars: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``localmem serve`` in a subprocess on a free port with ``env_vars``; yields (base URL, process)."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    env.update(PYTHONPATH=str(ROOT), **env_vars)
    process = subprocess.Popen(
        [sys.executable, "-m", "localmem", "--db", str(path), "--embedder", "hash", "serve",
         "--port", str(port), "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(process, url)
        yield url, process
    finally:
        stop(process)


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[str]:
    """``localmem serve`` as a user starts it: no token, 127.0.0.1."""
    with local_serve(tmp_path_factory.mktemp("served") / "memory.db") as (url, _):
        yield url


@pytest.fixture(scope="module")
def guarded(tmp_path_factory) -> Iterator[str]:
    """``localmem serve`` with the admin token and a token scoped to the context ``work``."""
    with local_serve(tmp_path_factory.mktemp("guarded") / "memory.db", LOCALMEM_API_TOKEN=ADMIN,
                     LOCALMEM_API_TOKENS=f"{SCOPED}=work") as (url, _):
        yield url


@asynccontextmanager
async def mcp_client(url: str, *, mode: str = "auto", headers: dict[str, str] | None = None,
                     statuses: list[int] | None = None) -> AsyncIterator[Any]:
    """The SDK's client over its Streamable HTTP transport to ``url``/mcp, sending ``headers``;
    the HTTP status of every response it gets is appended to ``statuses``."""
    async def record(response: httpx2.Response) -> None:
        if statuses is not None:
            statuses.append(response.status_code)

    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30),
                                  event_hooks={"response": [record]}) as http:
        with anyio.fail_after(60):
            async with Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode,
                              read_timeout_seconds=30) as client:
                yield client


def refused_by_sdk_client(url: str, headers: dict[str, str] | None, mode: str = "auto") -> list[int]:
    """Connect and list the tools, expecting the SDK client to fail; the HTTP statuses it met."""
    statuses: list[int] = []

    async def scenario() -> None:
        async with mcp_client(url, mode=mode, headers=headers, statuses=statuses) as client:
            await client.list_tools()

    with pytest.raises(Exception):  # noqa: B017 -- the SDK raises an ExceptionGroup around an MCPError
        anyio.run(scenario)
    return statuses


def memory_count(url: str, headers: dict[str, str] | None = None) -> int:
    return httpx.get(f"{url}/health", headers=headers, timeout=10).json()["memory_count"]


def raw_post(url: str, body: Any = PLANT, **headers: str) -> httpx.Response:
    return httpx.post(f"{url}/mcp", json=body, headers={**RAW_HEADERS, **headers}, timeout=30)


# -- the tools, both eras, memories shared with the HTTP API -------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_six_tools_store_and_recall_visible_through_the_api(served, mode):
    tag = f"mcp-http-{mode}-{uuid.uuid4().hex[:8]}"
    specs = {spec["name"]: spec for spec in TOOLS}

    async def scenario() -> dict[str, Any]:
        async with mcp_client(served, mode=mode) as client:
            seen: dict[str, Any] = {"version": client.protocol_version, "server": client.server_info.name}
            tools = (await client.list_tools()).tools
            seen["tools"] = {t.name: t.input_schema for t in tools}
            stored = await client.call_tool("store_memory", {
                "content": f"Chose PostgreSQL for billing over MCP ({mode}).", "tags": [tag], "importance": 0.8})
            assert not stored.is_error, stored.content[0].text
            seen["id"] = stored.structured_content["memory_id"]
            # A memory written through the HTTP API, read back through MCP.
            via_api = httpx.post(f"{served}/memory", json={"content": "Billing invoices go out monthly.",
                                                            "tags": [tag]}, timeout=10)
            assert via_api.status_code == 201, via_api.text
            seen["api_id"] = via_api.json()["memory_id"]
            recalled = await client.call_tool("recall_memory", {"query": "PostgreSQL billing", "tags": [tag]})
            assert not recalled.is_error, recalled.content[0].text
            seen["recalled"] = [r["memory_id"] for r in recalled.structured_content["results"]]
            return seen

    seen = anyio.run(scenario)
    assert seen["server"] == "localmem"
    assert tuple(seen["tools"]) == TOOL_NAMES
    assert all(seen["tools"][name] == specs[name]["inputSchema"] for name in TOOL_NAMES)  # stdio's own
    if mode == "legacy":
        assert seen["version"] < "2026"
    else:
        assert seen["version"] >= "2026-07-28"  # the stateless revision, no handshake
    assert set(seen["recalled"]) == {seen["id"], seen["api_id"]}
    fetched = httpx.get(f"{served}/memory/{seen['id']}", timeout=10)
    assert fetched.status_code == 200 and fetched.json()["memory"]["content"].startswith("Chose PostgreSQL")
    assert tag in fetched.json()["memory"]["tags"]


def test_concurrent_clients_all_land_in_the_one_store(served):
    tag = f"mcp-http-many-{uuid.uuid4().hex[:8]}"

    async def one_client(n: int) -> None:
        async with mcp_client(served) as client:
            for i in range(5):
                result = await client.call_tool("store_memory", {"content": f"client {n} note {i}", "tags": [tag]})
                assert not result.is_error, result.content[0].text

    async def scenario() -> None:
        async with anyio.create_task_group() as tasks:
            for n in range(4):
                tasks.start_soon(one_client, n)

    anyio.run(scenario)
    listed = httpx.get(f"{served}/memory/by-tag", params={"tags": tag, "limit": 100}, timeout=10)
    assert listed.status_code == 200, listed.text
    assert len(listed.json()["memories"]) == 20


def test_the_tools_use_the_apis_own_store_object():
    # ":memory:" cannot be opened a second time with the same contents: a memory stored
    # through /mcp is visible through the API only if both use this one MemoryStore.
    with MemoryStore(":memory:", embedder="hash") as store, \
            in_thread(lambda port: uvicorn_config(create_app(store, token=None, tokens={}), port=port,
                                                  log_level="warning", log_config=None)) as url:
        async def scenario() -> str:
            async with mcp_client(url) as client:
                result = await client.call_tool("store_memory", {"content": "one store for both", "tags": ["one"]})
                assert not result.is_error, result.content[0].text
                return result.structured_content["memory_id"]

        memory_id = anyio.run(scenario)
        assert store.get(memory_id)["content"] == "one store for both"
        assert httpx.get(f"{url}/memory/{memory_id}", timeout=10).status_code == 200


# -- tokens ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_without_the_token_mcp_is_refused(guarded, mode):
    before = memory_count(guarded, {"Authorization": f"Bearer {ADMIN}"})
    assert refused_by_sdk_client(guarded, None, mode)[:1] == [401]
    assert refused_by_sdk_client(guarded, {"Authorization": "Bearer not-the-token"}, mode)[:1] == [401]
    response = raw_post(guarded)
    assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
    assert raw_post(guarded, Authorization="Bearer not-the-token").status_code == 401
    assert raw_post(guarded, **{"X-API-Key": "not-the-token"}).status_code == 401
    assert memory_count(guarded, {"Authorization": f"Bearer {ADMIN}"}) == before  # nothing planted


@pytest.mark.parametrize("mode", MODES)
def test_with_the_token_mcp_works(guarded, mode):
    statuses: list[int] = []

    async def scenario() -> tuple[int, str]:
        async with mcp_client(guarded, mode=mode, headers={"Authorization": f"Bearer {ADMIN}"},
                              statuses=statuses) as client:
            tools = (await client.list_tools()).tools
            result = await client.call_tool("store_memory", {"content": f"token-guarded note {mode}"})
            assert not result.is_error, result.content[0].text
            return len(tools), result.structured_content["memory_id"]

    count, memory_id = anyio.run(scenario)
    assert count == 6 and statuses and set(statuses) <= {200, 202}
    fetched = httpx.get(f"{guarded}/memory/{memory_id}", headers={"X-API-Key": ADMIN}, timeout=10)
    assert fetched.status_code == 200
    # The API's other way of sending the token works here too.
    listed = raw_post(guarded, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, **{"X-API-Key": ADMIN})
    assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == 6


def test_a_scoped_token_gets_no_mcp_and_is_told_why(guarded):
    # The API lets a context-scoped token recall through POST /api/v1/memory/recall only;
    # MCP's tools write, and its recall has no context scoping, so /mcp refuses the token.
    admin = {"Authorization": f"Bearer {ADMIN}"}
    before = memory_count(guarded, admin)
    assert refused_by_sdk_client(guarded, {"Authorization": f"Bearer {SCOPED}"})[:1] == [403]
    response = raw_post(guarded, Authorization=f"Bearer {SCOPED}")
    assert response.status_code == 403
    message = response.json()["message"]
    assert "scoped" in message and "MCP (/mcp) needs the admin token (LOCALMEM_API_TOKEN)" in message
    assert memory_count(guarded, admin) == before
    recall = httpx.post(f"{guarded}/api/v1/memory/recall", json={"query": "note"},
                        headers={"Authorization": f"Bearer {SCOPED}"}, timeout=10)
    assert recall.status_code == 200  # what the token is for still works


# -- Host / Origin (DNS rebinding), body size, methods ---------------------------------------------------


def test_a_foreign_origin_or_host_is_refused(served):
    before = memory_count(served)
    statuses = refused_by_sdk_client(served, {"Origin": EVIL})
    assert statuses[:1] == [403]
    response = raw_post(served, Origin=EVIL)
    assert response.status_code == 403 and "Origin 'http://evil.example' is not allowed" in response.json()["message"]
    # DNS rebinding: the page's own name resolved to 127.0.0.1 arrives as Host.
    response = raw_post(served, Host="evil.example")
    assert response.status_code == 421 and "Host 'evil.example' is not allowed" in response.json()["message"]
    assert raw_post(served, **{"Sec-Fetch-Site": "cross-site"}).status_code == 403
    # A form or text/plain post (no CORS preflight) is no MCP request either.
    plain = httpx.post(f"{served}/mcp", content=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                       headers={"Content-Type": "text/plain", "Accept": RAW_HEADERS["Accept"]}, timeout=10)
    assert plain.status_code == 400
    assert memory_count(served) == before
    # The server's own origin (a page it serves, such as /ui/) is not foreign.
    own = raw_post(served, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, Origin=served)
    assert own.status_code == 200 and len(own.json()["result"]["tools"]) == 6


def test_a_huge_body_is_refused_without_harm(served):
    before = memory_count(served)
    oversize = MAX_BODY_BYTES + 1024
    declared = httpx.post(f"{served}/mcp", content=b"x" * oversize,
                          headers={"Content-Type": "application/json", **RAW_HEADERS}, timeout=60)
    assert declared.status_code == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: the cap counts what arrives
        block = b"[" * (1024 * 1024)
        for _ in range(oversize // len(block) + 1):
            yield block

    streamed = httpx.post(f"{served}/mcp", content=chunks(),
                          headers={"Content-Type": "application/json", **RAW_HEADERS}, timeout=60)
    assert streamed.status_code == 413
    deep = b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"store_memory","arguments":' \
           b'{"content":"deep","metadata":' + b"[" * 100_000 + b"]" * 100_000 + b"}}}"
    answer = httpx.post(f"{served}/mcp", content=deep, headers={"Content-Type": "application/json", **RAW_HEADERS},
                        timeout=60)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == -32700  # parse error, answered
    assert memory_count(served) == before
    assert raw_post(served, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}).status_code == 200


def test_get_offers_no_event_stream(served):
    response = httpx.get(f"{served}/mcp", headers={"Accept": "text/event-stream"}, timeout=5)
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    assert "stateless" in response.json()["message"]


# -- start and stop ----------------------------------------------------------------------------------


def test_the_sdk_is_imported_by_the_first_mcp_request_only():
    code = textwrap.dedent("""
        import sys
        from starlette.testclient import TestClient
        from localmem import MemoryStore
        from localmem.http.app import create_app
        with MemoryStore(":memory:", embedder="hash") as store, \\
                TestClient(create_app(store, token=None, tokens={}), base_url="http://localhost") as client:
            assert client.get("/health").status_code == 200
            assert not [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")], "imported at start"
            answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Accept": "application/json, text/event-stream",
                                          "MCP-Protocol-Version": "2025-06-18"})
            assert answer.status_code == 200 and len(answer.json()["result"]["tools"]) == 6, answer.text
            assert "mcp.server.streamable_http_manager" in sys.modules
    """)
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                   timeout=120)


def test_without_the_sdk_mcp_says_which_extra_to_install():
    # sys.modules["mcp"] = None makes every import of the SDK fail, as when it is not installed;
    # the API keeps working.
    code = textwrap.dedent("""
        import sys
        sys.modules["mcp"] = None
        from starlette.testclient import TestClient
        from localmem import MemoryStore
        from localmem.http.app import create_app
        with MemoryStore(":memory:", embedder="hash") as store, \\
                TestClient(create_app(store, token=None, tokens={}), base_url="http://localhost") as client:
            answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert answer.status_code == 501, answer.text
            assert "pip install 'localmem[mcp]'" in answer.json()["message"], answer.text
            assert client.get("/health").status_code == 200
    """)
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env={**env, "PYTHONPATH": str(ROOT)},
                   timeout=120)


def test_without_a_lifespan_mcp_says_so():
    from starlette.testclient import TestClient

    with MemoryStore(":memory:", embedder="hash") as store:
        client = TestClient(create_app(store, token=None, tokens={}), base_url="http://localhost")  # no lifespan
        response = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=RAW_HEADERS)
        assert response.status_code == 503 and "lifespan" in response.json()["message"]


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_serve_stops_cleanly_after_mcp_requests(tmp_path, signal_number):
    with local_serve(tmp_path / "memory.db") as (url, process):
        async def scenario() -> None:
            async with mcp_client(url) as client:
                result = await client.call_tool("store_memory", {"content": "kept across a restart"})
                assert not result.is_error

        anyio.run(scenario)
        process.send_signal(signal_number)
        process.wait(15)  # TimeoutExpired fails the test: a hang on Ctrl-C
        stderr = process.stderr.read().decode() if process.stderr else ""
        assert "Traceback" not in stderr and "ERROR" not in stderr, stderr
    with local_serve(tmp_path / "memory.db") as (url, _):
        assert memory_count(url) == 1  # the file was closed properly and the memory kept


def test_an_allowed_web_app_may_send_the_mcp_headers():
    from starlette.testclient import TestClient

    with MemoryStore(":memory:", embedder="hash") as store, \
            TestClient(create_app(store, token=None, tokens={}, allowed_origins=["http://app.test"]),
                       base_url="http://localhost") as client:
        preflight = client.options("/mcp", headers={
            "Origin": "http://app.test", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, authorization, mcp-protocol-version, mcp-method"})
        assert preflight.status_code == 200, preflight.text
        assert preflight.headers["access-control-allow-origin"] == "http://app.test"
        refused = client.options("/mcp", headers={"Origin": EVIL, "Access-Control-Request-Method": "POST"})
        assert refused.status_code == 403
