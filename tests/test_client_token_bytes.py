"""The API token as localmem's own clients send it (push, pull, sync) and as `localmem serve` checks it.

Found in audit17: serve compares the token's UTF-8 bytes (as curl and browsers send it), but the clients
sent it through http.client, which encodes a header as Latin-1. A user who set one non-ASCII token
(``LOCALMEM_API_TOKEN='pässwörd'``) for both ``localmem serve`` and ``localmem sync`` was told the server
refused it; a token outside Latin-1 (``'密码'``) or holding a line break ended sync in a traceback. Now the
clients send the token's UTF-8 bytes, and a token no header can carry is refused by name before any
request. A real server process and the CLI as subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore
from test_sync_http import free_port, served

REPO = Path(__file__).resolve().parent.parent


def cli(db: Path, *args: str, **env_vars: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN")}
    env.update(PYTHONPATH=str(REPO), LOCALMEM_DAEMON="0", **env_vars)
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("token", ["pässwörd-0123456789", "密码-0123456789-令牌"])
def test_a_non_ascii_token_set_for_serve_and_sync_is_accepted(tmp_path, token):
    served_db = tmp_path / "served.db"
    with MemoryStore(served_db, embedder="hash") as store:
        store.store("a note that lives on the server")
    with MemoryStore(tmp_path / "laptop.db", embedder="hash") as store:
        store.store("a note from the laptop")
    with served(served_db, token) as url:
        done = cli(tmp_path / "laptop.db", "sync", url, LOCALMEM_API_TOKEN=token)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        wrong = cli(tmp_path / "laptop.db", "sync", url, LOCALMEM_API_TOKEN=token + "x")
        assert wrong.returncode == 1 and "refused the token" in wrong.stderr, wrong.stderr


@pytest.mark.parametrize("command, variable", [("sync", "LOCALMEM_API_TOKEN"), ("push", "AUTOMEM_API_TOKEN"),
                                               ("pull", "AUTOMEM_API_TOKEN")])
def test_a_token_holding_a_line_break_is_refused_by_name_before_any_request(tmp_path, command, variable):
    with MemoryStore(tmp_path / "a.db", embedder="hash") as store:
        store.store("a note")
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: a request would fail otherwise
    done = cli(tmp_path / "a.db", command, url, **{variable: "first-half\nsecond-half"})
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert f"${variable}" in done.stderr and "control character" in done.stderr, done.stderr
    given = cli(tmp_path / "a.db", command, url, "--token", "first-half\rsecond-half")
    assert given.returncode == 2 and "--token" in given.stderr and "Traceback" not in given.stderr, given.stderr
