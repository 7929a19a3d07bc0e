"""``localmem hook`` as a subprocess: forwarded to a real ``localmem serve`` for its store, or
answered in-process when there is no usable server, always exit 0, within its deadline.

Forwarding is proved by the answer itself: the server puts its pid in a response header and the
hook names who answered (``-v``); and by settings the hook sends (``LOCALMEM_HOOK_*``), which the
server applies to that answer. Never by timing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from localmem import MemoryStore
from localmem.hooks import discovery
from localmem.hooks.client import SECRET_HEADER
from tests.serving import stop, wait_until_healthy

REPO = Path(__file__).resolve().parents[1]
TOKEN = "api-token-the-hook-does-not-know"
PROMPT = "where does the deploy script live?"
DEPLOY = "The deploy script lives in tools/deploy.sh and needs the staging token"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LOCALMEM_", "AUTOMEM_", "XDG_"))}
    runtime = tmp / "run"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env.update(PYTHONPATH=str(REPO), HOME=str(tmp / "home"), XDG_RUNTIME_DIR=str(runtime),
               XDG_CONFIG_HOME=str(tmp / "config"), XDG_CACHE_HOME=str(tmp / "cache"),
               HF_HUB_OFFLINE="1", LOCALMEM_HOOK_RELEVANCE_FLOOR="0")
    return env


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    """A real ``localmem serve`` (with an API token set) on a hash-embedder store."""
    tmp = tmp_path_factory.mktemp("hookfwd")
    db = tmp / "memory.db"
    with MemoryStore(str(db), embedder="hash") as store:
        store.store(DEPLOY)
        store.store("Alice prefers tabs over spaces in Python files")
    env = _environment(tmp)
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "localmem", "--db", str(db), "serve", "--port", str(port),
         "--log-level", "warning"], env={**env, "LOCALMEM_API_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}")
        old = dict(os.environ)
        os.environ["XDG_RUNTIME_DIR"] = env["XDG_RUNTIME_DIR"]
        try:
            deadline = time.monotonic() + 10
            while not Path(discovery.note_path(str(db))).exists():
                assert time.monotonic() < deadline, "the server wrote no discovery note"
                time.sleep(0.05)
            note = discovery.read_note(str(db))
        finally:
            os.environ.clear()
            os.environ.update(old)
        yield {"db": db, "env": env, "port": port, "process": process, "note": note, "tmp": tmp}
    finally:
        stop(process)


def hook(db: Path, env: dict[str, str], payload: object, *options: str, event: str = "UserPromptSubmit",
         raw: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    data = raw if raw is not None else json.dumps(payload).encode()
    if "--deadline" not in options:  # a loaded test machine must not turn an answer into a cut-off
        options = (*options, "--deadline", "60")
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "hook", event, "-v", *options],
                          input=data, env=env, capture_output=True, timeout=timeout)


def prompt_payload(session: str) -> dict[str, str]:
    return {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": "/tmp",
            "transcript_path": "/tmp/none.jsonl", "prompt": PROMPT}


def context_of(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]


def test_hook_forwards_to_the_running_server(served):
    result = hook(served["db"], served["env"], prompt_payload("fwd-1"))
    stderr = result.stderr.decode()
    assert f"from the localmem server (pid {served['process'].pid}," in stderr, stderr
    assert DEPLOY in context_of(result)


def test_forwarded_answer_uses_the_hooks_own_settings(served):
    """LOCALMEM_HOOK_* of the hook process reach the server: injection turned off there → nothing."""
    result = hook(served["db"], {**served["env"], "LOCALMEM_HOOK_INJECT": "0"}, prompt_payload("fwd-2"))
    stderr = result.stderr.decode()
    assert f"pid {served['process'].pid}" in stderr and "nothing to say" in stderr, stderr
    assert result.returncode == 0 and result.stdout == b""


def test_forwarded_and_in_process_answers_agree(served):
    forwarded = hook(served["db"], served["env"], prompt_payload("agree-1"))
    local = hook(served["db"], served["env"], prompt_payload("agree-2"), "--no-forward")
    assert "from in-process" in local.stderr.decode()
    assert context_of(forwarded) == context_of(local)


def test_forwarded_hook_imports_nothing_heavy(served):
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "localmem", "--db", str(served["db"]), "hook",
         "UserPromptSubmit", "-v"], input=json.dumps(prompt_payload("light-1")).encode(),
        env=served["env"], capture_output=True, timeout=60)
    stderr = result.stderr.decode()
    assert "from the localmem server" in stderr, stderr
    imported = {line.split("|")[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}
    for heavy in ("apsw", "sqlite_vec", "numpy", "localmem.store", "localmem.settings", "starlette",
                  "http.client"):
        assert heavy not in imported, heavy


def test_route_asks_for_the_secret_not_the_api_token(served):
    url = f"http://127.0.0.1:{served['port']}"
    body = {"payload": prompt_payload("route-1"), "settings": {"LOCALMEM_HOOK_RELEVANCE_FLOOR": "0"}}
    missing = httpx.post(f"{url}/hooks/UserPromptSubmit", json=body)
    wrong = httpx.post(f"{url}/hooks/UserPromptSubmit", json=body, headers={SECRET_HEADER: "0" * 64})
    with_token_only = httpx.post(f"{url}/hooks/UserPromptSubmit", json=body,
                                 headers={"Authorization": f"Bearer {TOKEN}"})
    assert [r.status_code for r in (missing, wrong, with_token_only)] == [403, 403, 403]
    assert SECRET_HEADER in missing.json()["message"]
    right = httpx.post(f"{url}/hooks/UserPromptSubmit", json=body, headers={SECRET_HEADER: served["note"].secret})
    assert right.status_code == 200
    assert DEPLOY in right.json()["answer"]["hookSpecificOutput"]["additionalContext"]
    headers = {SECRET_HEADER: served["note"].secret}
    extra = httpx.post(f"{url}/hooks/UserPromptSubmit", json={**body, "payolad": {}}, headers=headers)
    assert extra.status_code == 400 and "payolad" in extra.json()["message"]
    foreign = httpx.post(f"{url}/hooks/UserPromptSubmit", json={**body, "settings": {"PATH": "/tmp"}},
                         headers=headers)
    assert foreign.status_code == 400 and "LOCALMEM_HOOK_" in foreign.json()["message"]
    unknown = httpx.post(f"{url}/hooks/NoSuchEvent", json=body, headers=headers)
    assert unknown.status_code == 400 and "NoSuchEvent" in unknown.json()["message"]
    # The secret opens only the hook route: everything else still asks for the API token.
    other = httpx.get(f"{url}/recall", params={"query": "deploy"}, headers={SECRET_HEADER: served["note"].secret})
    assert other.status_code == 401


def test_note_is_private_and_names_loopback(served):
    path = Path(served["note"].path)
    assert (path.stat().st_mode & 0o777, path.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    data = json.loads(path.read_text())
    assert data["host"] == "127.0.0.1" and data["port"] == served["port"]
    assert data["pid"] == served["process"].pid


# Notes the hook must not use: the answer comes in-process, and a refused note is named on stderr.

@pytest.fixture()
def alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A store with no server, and where its note would be."""
    db = tmp_path / "memory.db"
    with MemoryStore(str(db), embedder="hash") as store:
        store.store(DEPLOY)
    env = _environment(tmp_path)
    monkeypatch.setenv("XDG_RUNTIME_DIR", env["XDG_RUNTIME_DIR"])
    path = Path(discovery.note_path(str(db)))
    path.parent.mkdir(mode=0o700, exist_ok=True)
    return db, env, path


def _note(db: Path, path: Path, **changes: object) -> None:
    data = {"version": 1, "pid": os.getpid(), "host": "127.0.0.1", "port": _free_port(),
            "secret": "ab" * 32, "store": discovery.store_key(str(db)), **changes}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_no_note_answers_in_process(alone):
    db, env, _ = alone
    result = hook(db, env, prompt_payload("cold-1"))
    assert "no server runs for" in result.stderr.decode() and "from in-process" in result.stderr.decode()
    assert DEPLOY in context_of(result)


@pytest.mark.parametrize("why", ["dead pid", "refused port"])
def test_stale_note_falls_back_to_in_process(alone, why):
    db, env, path = alone
    _note(db, path, **({"pid": _dead_pid()} if why == "dead pid" else {}))
    result = hook(db, env, prompt_payload("stale-1"))
    stderr = result.stderr.decode()
    assert ("no longer runs" if why == "dead pid" else "connecting to") in stderr, stderr
    assert "from in-process" in stderr
    assert DEPLOY in context_of(result)


def _open_to_others(db: Path, path: Path) -> str:
    _note(db, path)
    os.chmod(path, 0o644)
    return "readable or writable by other users"


def _symlink(db: Path, path: Path) -> str:
    target = path.with_name("elsewhere.json")
    _note(db, target)
    path.symlink_to(target)
    return "is a symlink"


def _other_owner(db: Path, path: Path) -> str:
    if os.geteuid() != 0:
        pytest.skip("needs root to give the note to another user")
    _note(db, path)
    os.chown(path, 65534, 65534)
    return "belongs to uid 65534"


def _foreign_host(db: Path, path: Path) -> str:
    _note(db, path, host="10.1.2.3")
    return "is not a loopback address"


def _folder_open(db: Path, path: Path) -> str:
    _note(db, path)
    os.chmod(path.parent, 0o755)
    return "open to other users"


def _hard_link(db: Path, path: Path) -> str:
    target = path.with_name("elsewhere.json")
    _note(db, target)
    os.link(target, path)
    return "links"


@pytest.mark.parametrize("make", [_open_to_others, _symlink, _other_owner, _foreign_host, _folder_open,
                                  _hard_link])
def test_untrusted_note_is_refused(alone, make):
    db, env, path = alone
    reason = make(db, path)
    # A listener that would take the hook's payload if the note were followed.
    with socket.socket() as trap:
        trap.bind(("127.0.0.1", json.loads(path.read_text())["port"] if make is not _foreign_host else 0))
        trap.listen()
        trap.settimeout(0)
        result = hook(db, env, prompt_payload("refused-1"))
        with pytest.raises(BlockingIOError):
            trap.accept()
    stderr = result.stderr.decode()
    assert "ignoring the server note" in stderr and reason in stderr, stderr
    assert "from in-process" in stderr
    assert DEPLOY in context_of(result)


def test_server_that_never_answers_meets_the_deadline(alone):
    db, env, path = alone
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop_accepting = threading.Event()

    def accept_and_hold() -> None:
        listener.settimeout(0.1)
        while not stop_accepting.is_set():
            try:
                held.append(listener.accept()[0])  # read nothing, answer nothing
            except OSError:
                continue

    thread = threading.Thread(target=accept_and_hold, daemon=True)
    thread.start()
    try:
        _note(db, path, port=listener.getsockname()[1])
        started = time.monotonic()
        result = hook(db, env, prompt_payload("late-1"), "--deadline", "0.5", timeout=30)
        elapsed = time.monotonic() - started
    finally:
        stop_accepting.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()
    assert result.returncode == 0 and result.stdout == b""
    assert "did not answer UserPromptSubmit within the deadline (0.5 s)" in result.stderr.decode()
    assert held, "the hook never connected"
    assert elapsed < 0.5 + 5, elapsed  # bounded by the deadline, not the default 2 s or a hang


@pytest.mark.parametrize("raw, said", [
    (b"{not json", "stdin is not valid JSON"),
    (b"", "stdin is empty"),
    (b"[1, 2]", "not an object"),
    (b'{"prompt": "' + b"x" * (1024 * 1024 + 10) + b'"}', "more than 1048576 bytes"),
])
def test_bad_stdin_says_why_and_exits_zero(alone, raw, said):
    db, env, _ = alone
    result = hook(db, env, None, raw=raw)
    assert result.returncode == 0 and result.stdout == b""
    assert said in result.stderr.decode()


def test_bad_usage_exits_zero_not_two(alone):
    """Exit 2 would block the prompt in Claude Code."""
    db, env, _ = alone
    for options in (["--deadline", "soon"], ["--deadline", "0"], ["--deadline", "1", "--bogus"]):
        result = hook(db, env, prompt_payload("usage-1"), *options)
        assert result.returncode == 0 and result.stdout == b"", options
        assert result.stderr.startswith(b"localmem hook:"), result.stderr
    unknown = hook(db, env, prompt_payload("usage-2"), event="NoSuchEvent")
    assert unknown.returncode == 0 and unknown.stdout == b""
    assert "NoSuchEvent" in unknown.stderr.decode()


def test_server_removes_its_note_when_it_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    db = tmp_path / "memory.db"
    with MemoryStore(str(db), embedder="hash"):
        pass
    env = _environment(tmp_path)
    monkeypatch.setenv("XDG_RUNTIME_DIR", env["XDG_RUNTIME_DIR"])
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(db), "serve", "--port", str(port),
                                "--log-level", "warning"], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 10
        while not Path(discovery.note_path(str(db))).exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        stop(process)
    assert process.returncode is not None
    assert not Path(discovery.note_path(str(db))).exists()


def test_ui_server_takes_hooks_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``localmem ui`` serves the same app on the store: it publishes a note, and hooks forward to it."""
    db = tmp_path / "memory.db"
    with MemoryStore(str(db), embedder="hash") as store:
        store.store(DEPLOY)
    env = _environment(tmp_path)
    monkeypatch.setenv("XDG_RUNTIME_DIR", env["XDG_RUNTIME_DIR"])
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(db), "ui", "--port", str(port)],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 10
        while not Path(discovery.note_path(str(db))).exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        result = hook(db, env, prompt_payload("ui-1"))
        assert f"from the localmem server (pid {process.pid}, 127.0.0.1:{port})" in result.stderr.decode()
        assert DEPLOY in context_of(result)
    finally:
        stop(process)
    assert not Path(discovery.note_path(str(db))).exists()


def test_in_process_answer_meets_the_deadline(alone):
    """No server, and the store's write lock held elsewhere: the hook's ledger write would wait
    10 s for it; at the deadline the hook prints nothing, says why and exits 0, and the store is
    intact afterwards."""
    import apsw

    db, env, _ = alone
    holder = apsw.Connection(str(db))
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        result = hook(db, env, prompt_payload("locked-1"), "--deadline", "0.8", timeout=30)
        elapsed = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 0 and result.stdout == b""
    assert "was not answered within the deadline (0.8 s, in-process" in result.stderr.decode(), result.stderr
    assert elapsed < 0.8 + 5, elapsed  # not the 10 s the lock wait would take
    with MemoryStore(str(db), embedder="hash") as store:
        health = store.health()
        assert health["memory_count"] == 1 and health["indexes_agree"]
    assert DEPLOY in context_of(hook(db, env, prompt_payload("locked-2")))


def test_port_taken_by_another_user_is_refused(alone):
    """A note left by a server killed without its shutdown, its pid reused by one of our processes,
    its port now held by another user: the hook must not hand that user the prompt."""
    if os.geteuid() != 0 or not Path("/proc/net/tcp").exists():
        pytest.skip("needs root (to listen as another user) and Linux /proc/net/tcp")
    db, env, path = alone
    squatter = subprocess.Popen(
        [sys.executable, "-c",
         "import os, socket, sys\n"
         "os.setgid(65534); os.setuid(65534)\n"
         "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
         "print(s.getsockname()[1], flush=True)\n"
         "s.settimeout(30)\n"
         "try:\n    s.accept(); print('taken', flush=True)\nexcept OSError:\n    pass\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        port = int(squatter.stdout.readline())
        _note(db, path, port=port)
        result = hook(db, env, prompt_payload("squat-1"))
    finally:
        squatter.kill()
        leftover = squatter.stdout.read()
        squatter.wait()
    stderr = result.stderr.decode()
    assert "ignoring the server note" in stderr, stderr
    assert "from in-process" in stderr and DEPLOY in context_of(result)
    assert "taken" not in leftover


def test_forwarded_settings_carry_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The server's working directory is not the hook's: a relative rules file is sent absolute;
    the deadline and verbosity (the client's own) are not sent."""
    from localmem.hooks.client import _settings_environment

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOCALMEM_HOOK_RULES_PATH", "rules.json")
    monkeypatch.setenv("LOCALMEM_HOOK_TOKEN_BUDGET", "800")
    monkeypatch.setenv("LOCALMEM_HOOK_DEADLINE", "5")
    monkeypatch.setenv("LOCALMEM_HOOK_VERBOSE", "1")
    sent = _settings_environment()
    assert sent["LOCALMEM_HOOK_RULES_PATH"] == str(tmp_path / "rules.json")
    assert sent["LOCALMEM_HOOK_TOKEN_BUDGET"] == "800"
    assert "LOCALMEM_HOOK_DEADLINE" not in sent and "LOCALMEM_HOOK_VERBOSE" not in sent


def test_hook_finds_a_server_started_without_a_runtime_folder(tmp_path: Path):
    """A server started where $XDG_RUNTIME_DIR is unset (a cron job, an ssh shell) writes its note
    to the cache folder; a hook that has $XDG_RUNTIME_DIR still finds it there."""
    db = tmp_path / "memory.db"
    with MemoryStore(str(db), embedder="hash") as store:
        store.store(DEPLOY)
    env = _environment(tmp_path)
    server_env = {k: v for k, v in env.items() if k != "XDG_RUNTIME_DIR"}
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(db), "serve", "--port", str(port),
                                "--log-level", "warning"], env=server_env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 10
        while not list((tmp_path / "cache" / "localmem" / "run").glob("*.json")):
            assert time.monotonic() < deadline, "no note in the cache folder"
            time.sleep(0.05)
        result = hook(db, env, prompt_payload("elsewhere-1"))
    finally:
        stop(process)
    assert f"from the localmem server (pid {process.pid}," in result.stderr.decode(), result.stderr
    assert DEPLOY in context_of(result)


def test_forwarded_stop_says_what_capture_stored_and_skipped(served):
    """The server's report comes back with the answer: ``-v`` prints capture's counts either way."""
    transcript = served["tmp"] / "capture-fwd.jsonl"
    lines = [{"type": "user", "uuid": f"c0ffee00-0000-4000-8000-0000000001{i:02d}", "sessionId": "cap-fwd",
              "timestamp": f"2026-11-28T10:00:{i:02d}.000Z", "isSidechain": False,
              "message": {"role": "user", "content": text}}
             for i, text in enumerate(["The nightly export runs at 02:00 UTC.", "thanks!"])]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    payload = {"hook_event_name": "Stop", "session_id": "cap-fwd", "cwd": "/tmp",
               "transcript_path": str(transcript)}
    result = hook(served["db"], served["env"], payload, event="Stop")
    stderr = result.stderr.decode()
    assert f"pid {served['process'].pid}" in stderr, stderr
    assert "capture: 1 message(s) stored" in stderr and "skipped by rule: courtesy 1" in stderr, stderr
