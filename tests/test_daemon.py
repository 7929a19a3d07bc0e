"""The warm process as a user meets it: commands, hooks and MCP as subprocesses, answered through
it with the same output as in-process, falling back when it is gone or killed mid-request, a
stale socket, two starters at once, another user's folder or socket refused, and the idle exit."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from daemon_helpers import REPO, Warm, alive, steady, steady_json

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the warm process needs Linux")

MEMORIES = [("the cat sat on the mat by the window", "pets,project:orchid"),
            ("coffee with oat milk every morning", "food"),
            ("deploy the orchid service with blue-green rollout", "project:orchid,ops"),
            ("the dog chases the cat around the garden", "pets")]


@pytest.fixture
def warm(tmp_path: Path):
    db = tmp_path / "memory.db"
    found = Warm(db)
    lines = "".join(json.dumps({"content": content, "tags": tags.split(",")}) + "\n" for content, tags in MEMORIES)
    proc = found.localmem("import", "-", stdin=lines, LOCALMEM_DAEMON="0")  # one process, not one a memory
    assert proc.returncode == 0, proc.stderr
    yield found
    found.close()


def test_recall_store_and_list_print_the_same_through_the_warm_process(warm: Warm) -> None:
    commands = [("recall", "cat"), ("recall", "cat", "--json"), ("recall", "--tags", "pets", "--limit", "1"),
                ("list",), ("list", "--json", "--limit", "2"), ("recall", "--limit", "nope"),
                ("recall", "cat", "--color", "always")]
    alone = [warm.localmem(*c, LOCALMEM_DAEMON="0") for c in commands]
    warm.start()
    through = [warm.localmem(*c, "-v") for c in commands]
    for command, here, there in zip(commands, alone, through):
        assert "answered by the warm process" in there.stderr, (command, there.stderr)
        assert there.returncode == here.returncode, command
        if "--json" in command:
            assert steady_json(json.loads(there.stdout)) == steady_json(json.loads(here.stdout)), command
        else:
            assert steady(there.stdout) == steady(here.stdout), command
        assert steady(there.stderr.replace(there.stderr[there.stderr.rfind("localmem: answered"):], "")) \
            == steady(here.stderr), command
    assert "\x1b[" in through[-1].stdout  # the colour the client's --color asked for
    stored = warm.localmem("store", "a note stored through the warm process", "--tags", "x", "-v")
    assert stored.returncode == 0 and "answered by the warm process" in stored.stderr
    memory_id = stored.stdout.strip()
    shown = warm.localmem("get", memory_id, LOCALMEM_DAEMON="0")  # in the file, seen by another process
    assert "a note stored through the warm process" in shown.stdout
    assert warm.status()["requests"] >= len(commands) + 1


def test_recall_starts_the_warm_process_and_off_means_off(warm: Warm) -> None:
    off = warm.localmem("recall", "cat", "-v", LOCALMEM_DAEMON="0")
    assert off.returncode == 0 and "answered by the warm process" not in off.stderr
    assert not warm.status()["running"] and not warm.pids()
    first = warm.localmem("recall", "cat", "-v")
    assert first.returncode == 0, first.stderr
    assert "answering in-process: no warm process runs" in first.stderr
    assert "started a warm process" in first.stderr
    status = warm.wait_running()
    assert status["store"] == str(warm.db.resolve()) and status["embedder"] == "hash"
    socket_path = Path(status["socket"])
    mode = socket_path.lstat().st_mode & 0o777
    assert mode == 0o600 and (warm.folder.stat().st_mode & 0o777) == 0o700
    second = warm.localmem("recall", "cat", "-v")
    assert "answered by the warm process" in second.stderr
    assert steady(second.stdout) == steady(first.stdout)
    stop = warm.localmem("daemon", "stop")
    assert stop.returncode == 0 and "stopped" in stop.stdout
    assert not socket_path.exists()  # removed before the lock is let go, which 'stop' waits for
    deadline = time.monotonic() + 30
    while alive(status["pid"]) and time.monotonic() < deadline:  # the interpreter's own exit
        time.sleep(0.05)
    assert not alive(status["pid"])


def test_another_embedder_is_answered_in_process(warm: Warm) -> None:
    warm.start()
    other = warm.localmem("recall", "cat", "-v", "--embedder", "none")
    assert other.returncode == 0
    assert "the warm process declined" in other.stderr and "embedder" in other.stderr


def test_a_hook_is_answered_alike_and_the_first_one_starts_the_warm_process(warm: Warm, tmp_path: Path) -> None:
    project = tmp_path / "orchid"
    (project / ".git").mkdir(parents=True)

    def prompt(session: str) -> dict:
        return {"session_id": session, "prompt": "how do we deploy the orchid service", "cwd": str(project),
                "hook_event_name": "UserPromptSubmit", "transcript_path": str(tmp_path / "none.jsonl")}

    alone, _ = warm.hook("UserPromptSubmit", prompt("s-alone"), LOCALMEM_DAEMON="0")
    first, said = warm.hook("UserPromptSubmit", prompt("s-first"))
    assert "from in-process" in said and "started a warm process" in said
    warm.wait_running()
    answer, said = warm.hook("UserPromptSubmit", prompt("s-warm"))
    assert "from the warm process" in said, said
    assert alone is not None and answer == alone == first
    assert "blue-green rollout" in answer["hookSpecificOutput"]["additionalContext"]
    again, said = warm.hook("UserPromptSubmit", prompt("s-warm"))
    assert again is None and "from the warm process" in said  # the ledger: injected once per session
    bad, said = warm.hook("UserPromptSubmit", {"session_id": "s/../x", "prompt": "x"})
    assert bad is None and "session_id" in said


def test_killed_mid_request_the_client_answers_in_process(warm: Warm) -> None:
    pid = warm.start()["pid"]
    expected = warm.localmem("recall", "cat", LOCALMEM_DAEMON="0").stdout
    os.kill(pid, signal.SIGSTOP)  # it accepts (the kernel's backlog) but answers nothing
    try:
        client = subprocess.Popen([sys.executable, "-m", "localmem", "recall", "cat", "-v"], env=warm.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        assert client.poll() is None  # waiting on the stopped process
    finally:
        os.kill(pid, signal.SIGKILL)
    out, err = client.communicate(timeout=120)
    assert client.returncode == 0, err
    assert "the warm process did not answer" in err and steady(out) == steady(expected)


def test_a_stale_socket_is_removed_and_replaced(warm: Warm) -> None:
    status = warm.start()
    os.kill(status["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(status["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert Path(status["socket"]).exists()  # left behind by the crash
    after = warm.localmem("recall", "cat", "-v")
    assert after.returncode == 0 and "starting or gone" in after.stderr
    assert "started a warm process" in after.stderr
    again = warm.wait_running()
    assert again["pid"] != status["pid"]
    assert "answered by the warm process" in warm.localmem("recall", "cat", "-v").stderr


def test_two_starters_at_once_end_with_one(warm: Warm) -> None:
    starters = [subprocess.Popen([sys.executable, "-m", "localmem.daemon_server", "--db", str(warm.db)],
                                 env=warm.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(4)]
    try:
        status = warm.wait_running()
        deadline = time.monotonic() + 60
        while sum(p.poll() is None for p in starters) > 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        running = [p for p in starters if p.poll() is None]
        assert [p.pid for p in running] == [status["pid"]]
        for process in starters:
            if process is not running[0]:
                assert "already serves" in process.communicate(timeout=10)[1]
    finally:
        for process in starters:
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=30)


def test_idle_exit(warm: Warm) -> None:
    status = warm.start("--idle", "1")
    assert status["idle_seconds"] == 1
    deadline = time.monotonic() + 30
    while alive(status["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(status["pid"]) and not Path(status["socket"]).exists()
    assert "stops" in warm.logs()
    assert not warm.status()["running"]


def test_it_exits_when_its_store_is_deleted(warm: Warm) -> None:
    status = warm.start()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{warm.db}{suffix}").unlink(missing_ok=True)
    deadline = time.monotonic() + 30
    while alive(status["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(status["pid"]) and "is gone; exiting" in warm.logs()


def test_a_folder_or_socket_not_this_users_is_refused(warm: Warm) -> None:
    if os.geteuid() != 0:
        pytest.skip("making files of another user needs root")
    warm.folder.mkdir(mode=0o700)
    os.chown(warm.folder, 12345, 12345)
    refused = warm.localmem("recall", "cat", "-v")
    assert refused.returncode == 0 and "belongs to uid 12345" in refused.stderr
    assert "answering in-process" in refused.stderr
    doctor = json.loads(warm.localmem("doctor", "--json").stdout)
    assert doctor["daemon"]["state"] == "refused"
    os.chown(warm.folder, 0, 0)
    os.chmod(warm.folder, 0o755)
    opened = warm.localmem("recall", "cat", "-v")
    assert "open to other users" in opened.stderr and not list(warm.folder.glob("*.sock"))
    os.chmod(warm.folder, 0o700)


PEER = r"""
import os, socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o600)
os.setgid(12345); os.setuid(12345)  # listen() records the credentials a client's SO_PEERCRED sees
sock.listen(4)
print("ready", flush=True)
while True:
    conn, _ = sock.accept()
    conn.recv(65536)
    body = b'{"ok": true, "result": {"code": 0, "stdout": "FORGED\\n", "stderr": ""}}'
    conn.sendall(len(body).to_bytes(4, "big") + body)
    conn.close()
"""


def test_a_socket_served_by_another_user_is_refused(warm: Warm) -> None:
    if os.geteuid() != 0:
        pytest.skip("serving as another user needs root")
    warm.start()
    socket_path = Path(warm.status()["socket"])
    warm.localmem("daemon", "stop")
    warm.folder.mkdir(exist_ok=True)
    # Hold the store's lock, so the socket is not taken for a dead process's and removed.
    import fcntl
    lock = os.open(next(warm.folder.glob("*.lock")), os.O_RDWR)
    fcntl.flock(lock, fcntl.LOCK_EX)
    peer = subprocess.Popen([sys.executable, "-c", PEER, str(socket_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert peer.stdout.readline().strip() == "ready"
        refused = warm.localmem("recall", "cat", "-v")
        assert refused.returncode == 0 and "FORGED" not in refused.stdout
        assert "served by uid 12345" in refused.stderr and "the cat sat" in refused.stdout
    finally:
        peer.kill()
        peer.communicate(timeout=30)
        os.close(lock)


def test_bad_frames_are_answered_and_the_process_lives_on(warm: Warm) -> None:
    socket_path = warm.start()["socket"]

    def exchange(raw: bytes) -> dict:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.settimeout(30)
            sock.connect(socket_path)
            sock.sendall(raw)
            size = struct.unpack(">I", sock.recv(4))[0]
            body = b""
            while len(body) < size:
                body += sock.recv(size - len(body))
            return json.loads(body)

    too_big = exchange(struct.pack(">I", 64 * 1024 * 1024))
    assert too_big["ok"] is False and too_big["status"] == 400 and "at most" in too_big["message"]
    not_json = exchange(struct.pack(">I", 5) + b"\xff{[}x")
    assert not_json["status"] == 400
    unknown = exchange(struct.pack(">I", 13) + b'{"op":"nope"}')
    assert unknown["status"] == 400 and "unknown op" in unknown["message"]
    deep = b'{"op":"cli","argv":' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert exchange(struct.pack(">I", len(deep)) + deep)["status"] == 400
    hostile = json.dumps({"op": "cli", "embedder": "hash", "argv": ["recall", "\ud800\x00" * 10],
                          "width": 80, "ttys": [False, False], "environ": {}}).encode()
    answer = exchange(struct.pack(">I", len(hostile)) + hostile)
    assert answer["ok"] is True and answer["result"]["code"] in (0, 2)
    assert "answered by the warm process" in warm.localmem("recall", "cat", "-v").stderr


def test_mcp_answers_through_the_warm_process(warm: Warm) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters

    def session(env: dict[str, str], content: str | None) -> tuple[dict, dict | None]:
        async def scenario() -> tuple[dict, dict | None]:
            params = StdioServerParameters(command=sys.executable, args=["-m", "localmem", "mcp"],
                                           cwd=str(REPO), env=env)
            async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
                found = await client.call_tool("recall_memory", {"query": "cat", "limit": 2})
                if content is None:
                    return found.structured_content, None
                stored = await client.call_tool("store_memory", {"content": content, "tags": ["m"]})
                return found.structured_content, stored.structured_content

        return anyio.run(scenario)

    alone, _ = session({**warm.env, "LOCALMEM_DAEMON": "0"}, None)
    before = warm.start()["requests"]
    found, stored = session(warm.env, "stored over MCP through the warm process")
    assert steady_json(found) == steady_json(alone)
    assert "the cat sat on the mat by the window" in [r["content"] for r in found["results"]]
    assert stored["memory_id"]
    assert warm.status()["requests"] >= before + 2  # answered there, not by a store opened in the MCP process
    listed = warm.localmem("list", "--json", LOCALMEM_DAEMON="0")
    assert "stored over MCP through the warm process" in listed.stdout


def test_mcp_answers_in_process_once_the_warm_process_is_gone(warm: Warm) -> None:
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters

    pid = warm.start()["pid"]

    async def scenario() -> tuple[dict, dict]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "localmem", "mcp"],
                                       cwd=str(REPO), env=warm.env)
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            through = await client.call_tool("recall_memory", {"query": "cat", "limit": 2})
            os.kill(pid, signal.SIGKILL)
            here = await client.call_tool("recall_memory", {"query": "cat", "limit": 2})
            return through.structured_content, here.structured_content

    through, here = anyio.run(scenario)
    assert steady_json(here) == steady_json(through)


def test_a_warm_process_a_hook_starts_builds_its_mcp_server_without_an_mcp_line(warm: Warm) -> None:
    # Claude Code spawns MCP servers at session start, racing the hooks: whoever starts the warm
    # process, the first assistant window must not wait for the SDK's import.
    pytest.importorskip("mcp")
    payload = {"session_id": "s-eager", "prompt": "where does the cat sit?", "cwd": "/",
               "hook_event_name": "UserPromptSubmit"}
    warm.start()
    warm.hook("UserPromptSubmit", payload)
    status = warm.status()
    deadline = time.monotonic() + 60
    while not status["mcp_server_built"] and time.monotonic() < deadline:  # built in the background
        time.sleep(0.1)
        status = warm.status()
    assert status["mcp_server_built"] is True
    assert status["requests"] >= 1  # the hook was answered, and no MCP line was ever sent
