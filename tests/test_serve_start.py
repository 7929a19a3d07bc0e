"""What ``localmem serve`` and ``localmem ui`` say as they start, what ``/`` answers, and a busy
port (issue 35), through real server processes.

serve names the database it serves and where the API and the browser are (stderr); ``/``
sends a browser on to ``/ui/`` (with or without a token: it only redirects); a port already
in use is said as such, with a free one to try, and exits 1 (the documented code for errors)
instead of uvicorn's own 3.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from serving import stop, wait_until_healthy

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN", "LOCALMEM_API_TOKENS", "LOCALMEM_DB")}
    return {**base, "PYTHONPATH": str(ROOT), **extra}


def start(db: Path, *args: str, **extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(**extra))


def test_serve_names_its_database_and_the_browser_and_slash_leads_there(tmp_path: Path) -> None:
    db, port = tmp_path / "served.db", free_port()
    process = start(db, "serve", "--port", str(port), "--log-level", "warning")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_healthy(process, url)
        root = httpx.get(f"{url}/", follow_redirects=False, timeout=5)
        assert root.status_code == 307 and root.headers["location"] == "/ui/"
        assert httpx.get(f"{url}/", follow_redirects=True, timeout=5).headers["content-type"].startswith(
            "text/html")
    finally:
        stop(process)
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert f"localmem serve: database {db} (embedder hash)" in stderr, stderr
    assert f"the memory browser at http://127.0.0.1:{port}/ui/" in stderr, stderr


def test_slash_redirects_before_sign_in_with_a_token(tmp_path: Path) -> None:
    port = free_port()
    process = start(tmp_path / "m.db", "serve", "--port", str(port), "--log-level", "warning",
                    LOCALMEM_API_TOKEN="secret-token-for-the-test")
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_healthy(process, url)
        root = httpx.get(f"{url}/", follow_redirects=False, timeout=5)
        assert root.status_code == 307 and root.headers["location"] == "/ui/"
        page = httpx.get(f"{url}/ui/", follow_redirects=False, timeout=5)
        assert page.status_code == 303 and page.headers["location"] == "/ui/login"  # then it asks
        assert httpx.get(f"{url}/recall", timeout=5).status_code == 401  # the API is not opened by it
    finally:
        stop(process)


def test_a_busy_port_is_said_plainly_and_exits_1(tmp_path: Path) -> None:
    with socket.socket() as occupier:
        occupier.bind(("127.0.0.1", 0))
        occupier.listen()
        port = occupier.getsockname()[1]
        for command in (["serve", "--port", str(port)], ["ui", "--port", str(port)]):
            result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(tmp_path / "m.db"),
                                     "--embedder", "hash", *command],
                                    capture_output=True, text=True, env=env(), timeout=60)
            assert result.returncode == 1, (command, result.returncode, result.stderr)
            assert f"port {port} is in use on 127.0.0.1 (try --port " in result.stderr, result.stderr
            assert "or stop the other process)" in result.stderr
            assert "Errno" not in result.stderr and "Traceback" not in result.stderr


def test_a_port_outside_0_to_65535_is_refused_by_name(tmp_path: Path) -> None:
    # serve raised OverflowError from its port probe (a traceback); ui already said it plainly.
    for command in (["serve", "--port", "70000"], ["serve", "--port=-1"], ["ui", "--port", "70000"]):
        result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(tmp_path / "m.db"),
                                 "--embedder", "hash", *command],
                                capture_output=True, text=True, env=env(), timeout=60)
        assert result.returncode == 2, (command, result.returncode, result.stderr)
        assert "--port" in result.stderr and "0 to 65535" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "m.db").exists()  # refused before the store was opened
