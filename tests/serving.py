"""Waiting for a server subprocess to answer: shared by the tests that start `localmem serve`."""

from __future__ import annotations

import subprocess
import time

import httpx


def wait_until_healthy(process: subprocess.Popen[bytes], url: str, *, seconds: float = 30) -> None:
    """Return once ``GET url/health`` answers 200; raise with the server's stderr if it exits or is late."""
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            stderr = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"server exited: {stderr[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.1)
