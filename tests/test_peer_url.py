"""The server URL push, pull and sync are given: one they cannot use is refused by name, before any request.

Found in audit17: ``localmem pull 'http://[::1'`` (an unclosed bracket), ``push 'http://::1]/'`` and
``sync 'https://[zz]/'`` ended in a ``ValueError`` traceback from ``urllib.parse`` (it raises for a bad
bracketed host instead of returning its parts); a URL holding a space or a control character was taken and
sent on a request line as written. Now each is a usage error (exit 2) naming the URL. The CLI as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("peer-url") / "a.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store("a note")
    return path


@pytest.mark.parametrize("command", ["push", "pull", "sync"])
@pytest.mark.parametrize("url", ["http://[::1", "http://::1]/", "https://[zz]/", "http://127.0.0.1:1/a b",
                                 "http://127.0.0.1:1/a\tb", "https://exa\x7fmple.com/"],
                         ids=["unclosed-bracket", "stray-bracket", "bracketed-name", "space", "tab", "delete"])
def test_a_url_that_cannot_be_used_is_refused_by_name(db, command, url):
    env = {k: v for k, v in os.environ.items() if k not in ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN")}
    env.update(PYTHONPATH=str(REPO), LOCALMEM_DAEMON="0")
    done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", command, url],
                          env=env, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.returncode == 2 and "URL" in done.stderr, (done.returncode, done.stderr)
