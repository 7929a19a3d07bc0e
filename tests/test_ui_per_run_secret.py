"""``localmem ui`` without an API token keeps other local users out with a secret of its own.

Any user of the machine can connect to a loopback port. Without ``LOCALMEM_API_TOKEN`` the browser
used to serve the store to all of them (it only warned); it now makes a per-run secret (never
printed, never on a command line, in a child's environment or on disk) and runs as if that were the
admin token: every route but ``/health`` (liveness only) asks for it or the sign-in cookie, which
the printed one-time link sets. Real ``localmem ui`` processes; the second-uid check needs root.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from serving import stop
from test_serve_start import env

STRANGER = 65534  # nobody
PRINTED = "localmem memory browser: "


def start_ui(db: Path, *args: str, **extra: str) -> tuple[subprocess.Popen[str], str]:
    """A ``localmem ui`` process over ``db`` with one memory in it, and the link it printed."""
    command = [sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash"]
    subprocess.run([*command, "store", "the spare key is under the blue pot"], env=env(LOCALMEM_DAEMON="0"),
                   check=True, capture_output=True)
    process = subprocess.Popen([*command, "ui", *args], env=env(**extra), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline() if process.stdout else ""
    assert line.startswith(PRINTED), (line, process.stderr.read() if process.poll() is not None else "")
    link = line.removeprefix(PRINTED).strip()
    base = link.split("/ui/")[0]
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                return process, link
        except httpx.HTTPError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, "localmem ui did not start"
        time.sleep(0.1)


def test_without_a_token_the_browser_asks_for_its_link_and_the_link_signs_in(tmp_path: Path) -> None:
    process, link = start_ui(tmp_path / "m.db", "--log-level", "warning")
    try:
        base = link.split("/ui/")[0]
        assert "/ui/login?code=" in link
        with httpx.Client(base_url=base, timeout=5) as stranger:
            assert stranger.get("/ui/api/memories").status_code == 401  # what the page reads
            assert stranger.get("/ui/api/search", params={"query": "key"}).status_code == 401
            assert stranger.get("/recall", params={"query": "key"}).status_code == 401
            assert stranger.post("/memory", json={"content": "planted"}).status_code == 401
            page = stranger.get("/ui/", follow_redirects=False)
            assert page.status_code == 303 and page.headers["location"] == "/ui/login"
            assert set(stranger.get("/health").json()) == {"status", "service", "version", "timestamp"}
            assert stranger.get(link.replace("code=", "code=x")).status_code == 401  # a guessed code
        with httpx.Client(base_url=base, timeout=5) as mine:
            signed = mine.get(link, follow_redirects=False)
            assert signed.status_code == 303 and "localmem_ui=" in signed.headers["set-cookie"]
            listed = mine.get("/ui/api/memories")
            assert listed.status_code == 200 and listed.json()["count"] == 1
            assert mine.get("/recall", params={"query": "key"}).status_code == 401  # the cookie is for /ui/ only
        with httpx.Client(base_url=base, timeout=5) as late:
            again = late.get(link, follow_redirects=False)  # spent by the first redeem
            assert again.status_code == 401 and "set-cookie" not in again.headers
            assert late.get("/ui/api/memories").status_code == 401
    finally:
        stop(process)
    said = (process.stdout.read() if process.stdout else "") + (process.stderr.read() if process.stderr else "")
    assert "every user of this machine can read and change this store" not in said, said  # sec10's warning went
    assert "secret of its own" in said, said


def test_with_a_token_the_browser_is_as_before(tmp_path: Path) -> None:
    process, link = start_ui(tmp_path / "m.db", "--log-level", "warning", LOCALMEM_API_TOKEN="my-own-token")
    try:
        base = link.split("/ui/")[0]
        assert "/ui/login?code=" in link
        with httpx.Client(base_url=base, timeout=5) as client:
            assert client.get("/ui/api/memories").status_code == 401
            assert client.get("/recall", params={"query": "key"},
                              headers={"Authorization": "Bearer my-own-token"}).status_code == 200
            assert client.post("/ui/login", json={"token": "my-own-token"}).status_code == 200  # typed
            assert client.get("/ui/api/memories").json()["count"] == 1
    finally:
        stop(process)
    said = process.stdout.read() if process.stdout else ""
    assert "secret of its own" not in said, said


def test_the_per_run_secret_is_not_put_in_the_environment(tmp_path: Path) -> None:
    # A child (the web browser --open starts) inherits this process's environment.
    from starlette.testclient import TestClient

    from localmem import MemoryStore
    from localmem.cli.ui import browser_app

    with pytest.MonkeyPatch.context() as patch:
        for name in ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN", "LOCALMEM_API_TOKENS"):
            patch.delenv(name, raising=False)
        before = dict(os.environ)
        with MemoryStore(str(tmp_path / "m.db"), embedder="hash") as store:
            app, per_run = browser_app(store, hook_secret="0" * 64)
            assert dict(os.environ) == before
            assert per_run and app.state.auth_required
            with TestClient(app, base_url="http://127.0.0.1:8001") as client:
                assert client.get("/ui/api/memories").status_code == 401
                code = app.state.ui_sessions.login_code()
                assert client.get(f"/ui/login?code={code}").status_code == 200
                assert client.get("/ui/api/memories").status_code == 200
        patch.setenv("LOCALMEM_API_TOKEN", "my-own-token")
        with MemoryStore(str(tmp_path / "m.db"), embedder="hash") as store:
            app, per_run = browser_app(store, hook_secret="0" * 64)
            assert not per_run and app.state.auth_required


STRANGER_CLIENT = textwrap.dedent("""
    import os, socket
    os.setgid({uid}); os.setuid({uid})
    for path in ("/ui/api/memories", "/recall?query=key", "/ui/api/search?query=key"):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.connect(("127.0.0.1", {port}))
        s.sendall(f"GET {{path}} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n".encode())
        print(path, s.recv(64).split(b"\\r\\n")[0].decode())
        s.close()
""")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="switching to another uid needs root")
def test_another_local_user_gets_401_from_the_browser_without_a_token(tmp_path: Path) -> None:
    process, link = start_ui(tmp_path / "m.db", "--log-level", "warning")
    try:
        port = int(link.split("/ui/")[0].rsplit(":", 1)[1])
        seen = subprocess.run([sys.executable, "-c", STRANGER_CLIENT.format(uid=STRANGER, port=port)],
                              capture_output=True, text=True, timeout=30, env=env())
    finally:
        stop(process)
    assert seen.returncode == 0, seen.stderr
    answers = seen.stdout.strip().splitlines()
    assert len(answers) == 3 and all(a.endswith("HTTP/1.1 401 Unauthorized") for a in answers), answers
