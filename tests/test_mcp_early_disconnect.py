"""A client that disconnects within a second of ``initialize``, while the store opens and the
model loads in the background, never gets the server killed by a signal (issue 35: SIGABRT,
"terminate called without an active exception", 4 of 12 tries; and, with a model slower to load
than the SDK's 2 s grace, SIGTERM from the client).

``python -m localmem mcp`` runs under a small parent that shares its stdio with it and records
how it ended, so the SDK client talks to the real server and the test sees its exit status.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

REPO = Path(__file__).resolve().parents[1]
# The signal came in 4 of 12 tries before the fix: 12 miss it with a chance under 1 %.
TRIES = 12

# The parent: runs the server with the same stdin/stdout, records its exit status, and ignores
# the SIGTERM the SDK sends to the whole process group (the server itself still gets it).
RECORDER = r"""
import signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1] + ".err", "ab") as err:
    code = subprocess.Popen(sys.argv[2:], stderr=err).wait()
with open(sys.argv[1], "a") as out:
    out.write(f"{code}\n")
"""


def disconnect_early(db: Path, record: Path, embedder: str, delay: float) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", RECORDER, str(record), sys.executable, "-m", "localmem", "--db", str(db),
              "--embedder", embedder, "mcp"],
        cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)})

    async def scenario() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            assert client.server_info.name == "localmem"
            await anyio.sleep(delay)  # then the client goes: stdin closes

    anyio.run(scenario)


@pytest.mark.parametrize("embedder", [
    "hash",
    # sentence-transformers MiniLM (the tests' ONNX cache is empty): the slowest load there is.
    pytest.param("auto", marks=pytest.mark.model),
])
def test_early_disconnect_never_ends_the_server_by_a_signal(tmp_path: Path, embedder: str) -> None:
    db, record = tmp_path / "memory.db", tmp_path / "exits"
    for attempt in range(TRIES):
        disconnect_early(db, record, embedder, delay=attempt / (TRIES - 1))  # from at once to 1 s
    codes = [int(line) for line in record.read_text().split()]
    stderr = (tmp_path / "exits.err").read_text(errors="replace")
    assert len(codes) == TRIES, f"a server was killed with its recorder: {codes}\n{stderr[-2000:]}"
    assert codes == [0] * TRIES, f"exit codes (negative: the signal): {codes}\n{stderr[-2000:]}"
    assert "terminate called" not in stderr
    with sqlite3.connect(db) as conn:  # every open the disconnects cut short left it whole
        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
