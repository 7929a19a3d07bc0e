"""``localmem mcp`` through the warm process (its stdlib front end, ``mcp_server.front``) against the
SDK server in-process (``LOCALMEM_DAEMON=0``): the same bytes for the same lines (handshake and
protocol version negotiation, tools/list, tool calls, errors, hostile lines), the official SDK
client's view of both, and the fall back to in-process when the warm process is killed mid-session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_helpers import REPO, Warm, steady_json

pytestmark = [pytest.mark.skipif(sys.platform != "linux", reason="the warm process needs Linux")]
mcp = pytest.importorskip("mcp")


@pytest.fixture
def warm(tmp_path: Path):
    found = Warm(tmp_path / "memory.db").stocked("the cat sat on the mat by the window", "deploy the orchid service with blue-green rollout")
    yield found
    found.close()


def initialize(version: str, request_id: int = 0) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def raw_session(env: dict[str, str], lines: list[bytes]) -> tuple[list, str]:
    done = subprocess.run([sys.executable, "-m", "localmem", "mcp"], input=b"".join(lines), capture_output=True,
                          env=env, cwd=str(REPO), timeout=120)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    return sorted((steady_json(a) for a in answers), key=lambda a: json.dumps(a.get("id"))), done.stderr.decode()


def line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


@pytest.mark.parametrize("version", ["2025-06-18", "2024-11-05", "1999-01-01", "2025-11-25"])
def test_the_same_lines_get_the_same_answers_through_the_warm_process(warm: Warm, version: str):
    lines = [line(initialize(version)), line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
             line({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "recall_memory", "arguments": {"query": "cat", "limit": 2}}}),
             line({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
             line({"jsonrpc": "2.0", "id": 4, "method": "resources/list"}),
             line({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                   "params": {"name": "recall_memory", "arguments": {"limit": "many"}}}),
             line({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "no_such_tool"}}),
             b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"recall_memory",'
             b'"arguments":{"query":"\\ud800 cat"}}}\n',
             b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"recall_memory",'
             b'"arguments":{"query":"\xff\xfe cat"}}}\n',
             b"not json at all\n", b"\n", b'{"jsonrpc":"2.0","id":9}\n',
             line({"jsonrpc": "2.0", "id": 10, "method": "tools/call",
                   "params": {"name": "recall_memory", "arguments": {"query": "x" * 300_000}}}),
             b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
             b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"recall_memory",'
             b'"arguments":{"query":"a\\u0000b \x00 cat"}}}\n',
             line({"jsonrpc": "2.0", "id": 13, "method": "tools/call",
                   "params": {"name": "recall_memory", "arguments": {"query": "cat OR \"x\" NEAR(a b) *"}}})]
    alone, _ = raw_session({**warm.env, "LOCALMEM_DAEMON": "0"}, lines)
    warm.start()
    before = warm.status()["requests"]
    through, said = raw_session(warm.env, lines)
    assert "in-process" not in said, said
    assert warm.status()["requests"] >= before + len(lines) - 1  # the blank line is not sent
    assert through == alone
    assert alone[0]["result"]["protocolVersion"] == (version if version != "1999-01-01" else
                                                     alone[0]["result"]["protocolVersion"])
    assert any("cat sat on the mat" in json.dumps(a) for a in through)


def test_the_sdk_client_sees_the_same_server_both_ways(warm: Warm):
    import anyio
    from mcp import Client, StdioServerParameters

    async def session(env: dict[str, str]) -> dict:
        params = StdioServerParameters(command=sys.executable, args=["-m", "localmem", "mcp"], cwd=str(REPO), env=env)
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            tools = await client.list_tools()
            found = await client.call_tool("recall_memory", {"query": "orchid deploy", "limit": 2})
            bad = await client.call_tool("store_memory", {"content": ""})
            return {"version": client.protocol_version, "instructions": client.instructions,
                    "server": client.server_info.model_dump() if client.server_info else None,
                    "tools": [t.model_dump() for t in tools.tools],
                    "found": steady_json(found.model_dump()), "bad": bad.model_dump()}

    alone = anyio.run(session, {**warm.env, "LOCALMEM_DAEMON": "0"})
    warm.start()
    before = warm.status()["requests"]
    through = anyio.run(session, warm.env)
    assert warm.status()["requests"] >= before + 4
    assert through == alone
    assert len(alone["tools"]) >= 6 and alone["bad"]["is_error"] is True
    assert "blue-green rollout" in json.dumps(alone["found"])


def test_killed_mid_session_the_front_end_answers_in_process(warm: Warm):
    pid = warm.start()["pid"]
    process = subprocess.Popen([sys.executable, "-m", "localmem", "mcp"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=warm.env, cwd=str(REPO))
    assert process.stdin is not None and process.stdout is not None
    try:
        def ask(message: dict) -> dict:
            process.stdin.write(line(message))
            process.stdin.flush()
            return json.loads(process.stdout.readline())

        first = ask(initialize("2025-06-18"))
        assert first["id"] == 0 and "capabilities" in first["result"]
        process.stdin.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        recall = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "recall_memory", "arguments": {"query": "cat", "limit": 1}}}
        through = ask(recall)
        os.kill(pid, signal.SIGKILL)
        here = ask(dict(recall, id=2))
        listed = ask({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        stored = ask({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                      "params": {"name": "store_memory", "arguments": {"content": "stored after the kill"}}})
    finally:
        process.stdin.close()
        said = process.stderr.read().decode()
        process.wait(timeout=60)
    assert process.returncode == 0, said
    assert "answering in-process from now on" in said
    assert here["id"] == 2 and steady_json(here["result"]) == steady_json(through["result"])
    assert listed["id"] == 3 and len(listed["result"]["tools"]) >= 6
    assert stored["id"] == 4 and not stored["result"].get("isError")
    assert "stored after the kill" in warm.localmem("list", "--json", LOCALMEM_DAEMON="0").stdout


def test_another_embedder_or_no_warm_process_reads_nothing_and_runs_the_sdk_server(warm: Warm):
    warm.start()
    lines = [line(initialize("2025-06-18")), line({"jsonrpc": "2.0", "id": 1, "method": "ping"})]
    before = warm.status()["requests"]
    other, _ = raw_session({**warm.env, "LOCALMEM_EMBEDDER": "hash:64"}, lines)
    assert [a["id"] for a in other] == [0, 1]
    # Counted: the status ask that read `before`, the front end's and the SDK server's own status
    # asks (each finds the embedder differs); no line was sent there.
    assert warm.status()["requests"] == before + 3


def test_gone_before_the_handshake_the_in_process_server_answers_it(warm: Warm):
    import time

    pid = warm.start()["pid"]
    before = warm.status()["requests"]
    process = subprocess.Popen([sys.executable, "-m", "localmem", "mcp"], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=warm.env, cwd=str(REPO))
    assert process.stdin is not None and process.stdout is not None
    try:
        deadline = time.monotonic() + 60
        while warm.status()["requests"] < before + 2 and time.monotonic() < deadline:  # its status ask
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        process.stdin.write(line(initialize("2025-06-18")) + line({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        process.stdin.close()
        answers = [json.loads(text) for text in process.stdout.read().splitlines()]
    finally:
        said = process.stderr.read().decode()
        process.wait(timeout=60)
    assert "answering in-process from now on" in said, said
    assert [a["id"] for a in answers] == [0, 1] and answers[0]["result"]["protocolVersion"] == "2025-06-18"


def test_a_line_too_long_for_the_wire_is_answered_in_process_whole(warm: Warm):
    huge = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "store_memory", "arguments": {"content": "y" * 1_500_000}}}
    lines = [line(initialize("2025-06-18")), line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             line(huge), line({"jsonrpc": "2.0", "id": 2, "method": "ping"})]
    alone, _ = raw_session({**warm.env, "LOCALMEM_DAEMON": "0"}, lines)
    warm.start()
    through, said = raw_session(warm.env, lines)
    assert "a line longer than" in said and "answering in-process from now on" in said, said
    assert through == alone and [a["id"] for a in through] == [0, 1, 2]
