"""Shared machinery of ``benchmarks/attacks/attacks.py``: tallies, servers, the CLI, MCP, snapshots.

* ``Tally``: one row of the table (attempts, failures, 500s, data lost, first notes).
* ``Server``: ``localmem serve`` as a subprocess on a free 127.0.0.1 port.
* ``Cli``: the command line in fresh processes. A pre-imported runner process
  forks one child per command, which calls ``localmem.cli.main`` (what
  ``python -m localmem`` runs) with its own working directory, environment,
  umask and stdio, so hundreds of commands fit in the time budget; the first
  command of every kind runs as a real ``python -m localmem`` subprocess.
* ``McpPipe``: ``localmem mcp`` on raw pipes (JSON-RPC lines, byte for byte).
* ``snapshot`` / ``lost``: every committed memory and edge, compared field by field.

Stdlib, apsw, httpx and localmem only.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Variables a user's shell might set that would change what an attack meets.
ENV_PREFIXES = ("LOCALMEM_", "AUTOMEM_")
KEEP = ("LOCALMEM_CACHE_DIR", "LOCALMEM_ONNX_EXPORT")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment for every process the harness starts: no LOCALMEM_* settings, this tree first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES) or k in KEEP}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTHONIOENCODING"] = "utf-8"
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


# -- one row of the table --------------------------------------------------------------------------


@dataclass
class Tally:
    """Counts for one item. A 500 / traceback / internal error counts once, as a 500."""

    item: str
    tried: str = ""
    attempts: int = 0
    failures: int = 0
    errors: int = 0
    lost: int = 0
    skipped: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def attempt(self, ok: bool, note: str = "", *, error: bool = False) -> bool:
        """Record one attempt; ``ok`` means the attack was stopped and the answer was right."""
        self.attempts += 1
        if error:
            self.errors += 1
            self._note(f"500/traceback: {note}")
        elif not ok:
            self.failures += 1
            self._note(f"got through: {note}")
        return ok and not error

    def lose(self, count: int, note: str) -> None:
        if count:
            self.lost += count
            self._note(f"data lost ({count}): {note}")

    def _note(self, text: str) -> None:
        if len(self.notes) < 8:
            self.notes.append(text[:400])


# -- what is committed, and what changed -------------------------------------------------------------


def _connect_read_only(path: Path) -> Any:
    import apsw

    return apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)


def snapshot(path: Path) -> dict[str, dict[Any, str]]:
    """Every memory (all columns but ``last_accessed``, which recall updates) and edge of the file,
    with its embedding, as digests; read through a read-only connection (a server may hold the file)."""
    conn = _connect_read_only(path)
    try:
        memories: dict[Any, str] = {}
        cursor = conn.execute("SELECT m.*, e.embedding AS _embedding FROM memories m "
                              "LEFT JOIN memory_embeddings e ON e.pk = m.pk")
        names = [d[0] for d in cursor.getdescription()]
        for row in cursor:
            record = {n: v for n, v in zip(names, row) if n not in ("last_accessed", "pk")}
            blob = record.pop("_embedding")
            record["embedding_sha"] = hashlib.sha256(blob).hexdigest() if blob else None
            memories[record["id"]] = json.dumps(record, sort_keys=True, default=str)
        edges: dict[Any, str] = {}
        for src, kind, dst, strength, updated, props in conn.execute(
                "SELECT a.id, e.type, b.id, e.strength, e.updated_at, e.properties FROM edges e "
                "JOIN memories a ON a.pk = e.src JOIN memories b ON b.pk = e.dst"):
            edges[(src, kind, dst)] = json.dumps([strength, updated, props])
        return {"memories": memories, "edges": edges}
    finally:
        conn.close()


def lost(before: dict[str, dict[Any, str]], after: dict[str, dict[Any, str]],
         *, ignore_embeddings: frozenset[str] = frozenset()) -> int:
    """Memories and edges of ``before`` that are missing from ``after`` or differ there."""
    count = 0
    for memory_id, record in before["memories"].items():
        now = after["memories"].get(memory_id)
        if now is None:
            count += 1
        elif now != record:
            if memory_id in ignore_embeddings:
                a, b = json.loads(record), json.loads(now)
                a.pop("embedding_sha"), b.pop("embedding_sha")
                if a == b:
                    continue
            count += 1
    for key, record in before["edges"].items():
        if after["edges"].get(key) != record:
            count += 1
    return count


def strict_json(text: str) -> Any:
    """Parse ``text`` as strict JSON: NaN / Infinity raise ValueError."""
    def refuse(name: str) -> Any:
        raise ValueError(f"{name} in the output")

    return json.loads(text, parse_constant=refuse)


# -- the HTTP server -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``localmem serve`` on 127.0.0.1; ``request`` never raises (None: no answer)."""

    def __init__(self, path: Path, env: dict[str, str], log: Path, *options: str) -> None:
        import httpx

        self.path, self.port = path, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._log_file = open(log, "wb")  # noqa: SIM115 -- closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "localmem", "--db", str(path), "--embedder", "hash", "serve",
             "--port", str(self.port), "--log-level", "warning", *options],
            env=env, stdout=subprocess.DEVNULL, stderr=self._log_file, cwd=path.parent)
        self.client = httpx.Client(base_url=self.url, timeout=30)
        deadline = time.monotonic() + 60
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                if self.client.get("/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("server did not start")
            time.sleep(0.1)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        import httpx

        try:
            return self.client.request(method, path, **kwargs)
        except httpx.HTTPError:
            return None

    def stop(self) -> str:
        """Stop the server; returns what it wrote to stderr."""
        self.client.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log_file.close()
        return self.log.read_text(errors="replace")


@contextmanager
def serving(path: Path, log: Path, env: dict[str, str] | None = None, *options: str) -> Iterator[Server]:
    server = Server(path, env or clean_env(), log, *options)
    try:
        yield server
    finally:
        server.stop()


def tracebacks(text: str) -> int:
    return text.count("Traceback (most recent call last)")


# -- the command line --------------------------------------------------------------------------------

RUNNER = r"""
import io, json, os, sys, time, traceback, signal
import apsw, localmem, localmem.cli, localmem.maintenance.doctor, localmem.maintenance.importer
import localmem.maintenance.backup, localmem.recall, localmem.kagura
from localmem.cli import main
folder = sys.argv[1]
for line in sys.stdin:
    job = json.loads(line)
    out, err, fsyncs = (os.path.join(folder, n) for n in ("out", "err", "fsync"))
    stdin = os.path.join(folder, "in")
    with open(stdin, "wb") as handle:
        handle.write((job.get("stdin") or "").encode("utf-8", "surrogatepass"))
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        code = 70
        try:
            os.chdir(job["cwd"])
            if job.get("umask") is not None:
                os.umask(job["umask"])
            os.environ.clear()
            os.environ.update(job["env"])
            for fd, name, flags in ((0, stdin, os.O_RDONLY), (1, out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                    (2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
                os.dup2(os.open(name, flags, 0o600), fd)
            sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
            sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
            sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                          line_buffering=True)
            synced = []
            if job.get("trace_fsync"):
                real = os.fsync
                def fsync(fd, real=real, synced=synced):
                    synced.append(os.readlink(f"/proc/self/fd/{fd}"))
                    real(fd)
                os.fsync = fsync
            try:
                code = main(job["argv"])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
                code = 70
            if job.get("trace_fsync"):
                with open(fsyncs, "w") as handle:
                    json.dump(synced, handle)
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code if isinstance(code, int) else 1)
    deadline = start + job["timeout"]
    hung = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            hung, status = True, -9
            break
        time.sleep(0.002)
    code = os.waitstatus_to_exitcode(status) if not hung else -9
    read = lambda n: open(n, "rb").read().decode("utf-8", "replace") if os.path.exists(n) else ""
    synced = json.loads(read(fsyncs) or "[]") if job.get("trace_fsync") else []
    reply = {"code": code, "stdout": read(out), "stderr": read(err), "hung": hung,
             "seconds": time.monotonic() - start, "fsynced": synced}
    for name in (out, err, fsyncs):
        if os.path.exists(name):
            os.unlink(name)
    print(json.dumps(reply), flush=True)
"""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    hung: bool = False
    seconds: float = 0.0
    real: bool = False
    fsynced: list[str] = field(default_factory=list)

    @property
    def crashed(self) -> bool:
        """A traceback, or an exit that is not one of the CLI's codes (0, 1, 2)."""
        return "Traceback" in self.stderr or self.code not in (0, 1, 2) and not self.hung

    @property
    def refused(self) -> bool:
        """Exit 1 or 2 with ``error: ...`` on stderr and no traceback."""
        return self.code in (1, 2) and "error: " in self.stderr and "Traceback" not in self.stderr


class Cli:
    """``localmem ARGS`` in fresh processes (see the module docstring)."""

    def __init__(self, workdir: Path) -> None:
        folder = workdir / "cli-runner"
        folder.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen([sys.executable, "-c", RUNNER, str(folder)], env=clean_env(),
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        cwd=str(workdir))
        self.kinds: set[str] = set()
        self.real_runs = self.forked_runs = 0

    def run(self, *argv: str, cwd: Path, kind: str = "", env: dict[str, str] | None = None,
            umask: int | None = None, stdin: str | None = None, timeout: float = 30,
            trace_fsync: bool = False, real: bool | None = None) -> Run:
        """``localmem ARGV`` in ``cwd``; the first command of each ``kind`` (and ``real=True``)
        runs as ``python -m localmem``."""
        env = env or clean_env()
        if real is None:
            real = kind not in self.kinds and not trace_fsync
        self.kinds.add(kind)
        if real:
            self.real_runs += 1
            return self._real(list(argv), cwd, env, umask, stdin, timeout)
        self.forked_runs += 1
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"argv": list(argv), "cwd": str(cwd), "env": env, "umask": umask,
                                             "stdin": stdin, "timeout": timeout,
                                             "trace_fsync": trace_fsync}) + "\n")
        self.process.stdin.flush()
        reply = json.loads(self.process.stdout.readline())
        return Run(reply["code"], reply["stdout"], reply["stderr"], reply["hung"], reply["seconds"],
                   False, reply["fsynced"])

    @staticmethod
    def _real(argv: list[str], cwd: Path, env: dict[str, str], umask: int | None, stdin: str | None,
              timeout: float) -> Run:
        preexec = (lambda: os.umask(umask)) if umask is not None else None  # noqa: E731
        start = time.monotonic()
        try:
            done = subprocess.run([sys.executable, "-m", "localmem", *argv], cwd=cwd, env=env,
                                  input=(stdin or "").encode("utf-8", "surrogatepass"), capture_output=True,
                                  timeout=timeout, preexec_fn=preexec, check=False)
        except subprocess.TimeoutExpired as exc:
            return Run(-9, (exc.stdout or b"").decode("utf-8", "replace"),
                       (exc.stderr or b"").decode("utf-8", "replace"), True, timeout, True)
        return Run(done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace"),
                   False, time.monotonic() - start, True)

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# -- MCP over a pipe ------------------------------------------------------------------------------------


class McpPipe:
    """``localmem mcp`` on raw pipes; stderr goes to a file (a full pipe would stall the server)."""

    def __init__(self, db: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.log = log
        self._log_file = open(log, "wb")  # noqa: SIM115 -- closed in close()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log_file, env=env or clean_env(),
            cwd=db.parent)
        self._buffer = b""
        self._next_id = 1000
        self.send_json({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "attacks", "version": "0"}}})
        if self.answer(60) is None:
            raise RuntimeError(f"localmem mcp did not answer initialize: {log.read_text(errors='replace')[-2000:]}")
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def send_json(self, message: dict[str, Any]) -> None:
        self.send(json.dumps(message).encode("ascii"))

    def answer(self, timeout: float = 5.0) -> dict[str, Any] | None:
        """The next line the server writes, parsed; None when nothing comes within ``timeout``."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def call(self, name: str, arguments: dict[str, Any], timeout: float = 10.0) -> dict[str, Any] | None:
        """A tools/call with ``json.dumps`` escaping (lone surrogates as ``\\udXXX``); the answer or None."""
        self._next_id += 1
        self.send_json({"jsonrpc": "2.0", "id": self._next_id, "method": "tools/call",
                        "params": {"name": name, "arguments": arguments}})
        return self.answer_to(self._next_id, timeout)

    def call_raw(self, name: bytes, arguments: bytes, timeout: float = 10.0) -> dict[str, Any] | None:
        """A tools/call line byte for byte (raw invalid UTF-8 included)."""
        self._next_id += 1
        self.send(b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}'
                  % (self._next_id, name, arguments))
        return self.answer_to(self._next_id, timeout)

    def answer_to(self, request_id: int, timeout: float) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while True:
            reply = self.answer(max(0.0, deadline - time.monotonic()))
            if reply is None or reply.get("id") == request_id:
                return reply

    def close(self) -> str:
        """End the session (close stdin); returns what the server wrote to stderr."""
        assert self.process.stdin is not None
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log_file.close()
        return self.log.read_text(errors="replace")


def tool_text(reply: dict[str, Any] | None) -> str:
    if not reply or "result" not in reply:
        return json.dumps(reply)
    return "\n".join(c.get("text", "") for c in reply["result"].get("content", []))


def mcp_internal(reply: dict[str, Any] | None) -> bool:
    """An answer that is an internal error (a 500 in MCP clothes)."""
    if not reply:
        return False
    if "error" in reply:
        return reply["error"].get("code") == -32603
    return "internal error" in tool_text(reply).lower()


def mcp_refused(reply: dict[str, Any] | None) -> bool:
    """An ``isError`` result or a JSON-RPC error (not an internal one)."""
    if not reply:
        return False
    if "error" in reply:
        return True
    return bool(reply.get("result", {}).get("isError"))


@contextmanager
def mcp_session(db: Path, log: Path, env: dict[str, str] | None = None) -> Iterator[McpPipe]:
    pipe = McpPipe(db, log, env)
    try:
        yield pipe
    finally:
        pipe.close()


def temp_folder(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))
