"""Servers for tests: waiting for a `localmem serve` subprocess, stopping it, and
running an app with uvicorn in a thread."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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


@contextmanager
def in_thread(make_config: Callable[[int], Any]) -> Iterator[str]:
    """Run uvicorn in a thread on a free loopback port; yields the base URL.

    ``make_config(port)`` returns the ``uvicorn.Config`` to serve with (tests
    differ in logging, lifespan and whether they use ``localmem serve``'s own).
    """
    import uvicorn

    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only then (else ~40 ms per request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(make_config(port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def stop(process: subprocess.Popen[bytes], seconds: float = 10) -> None:
    """Terminate a server subprocess, killing it if it does not exit within ``seconds``."""
    process.terminate()
    try:
        process.wait(seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
