"""What the warm process answers: one request (a JSON object with ``op``) in, ``result`` out.

``status`` and ``stop`` describe and end the process; ``hook`` answers a hook as
``localmem serve``'s route does; ``cli`` runs ``recall``, ``store`` or ``list``
with the client's arguments and terminal, capturing what it prints; ``mcp``
calls one MCP tool; ``mcp_line`` answers one line of ``localmem mcp``'s client with the
MCP SDK's server (``mcp_lines``). Every request names the embedder its client would use
(``embedder``; "" for the store's own): a client asking for another one than
this process serves is told so (409) and answers in-process.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError, ValidationError
from .mcp_lines import McpLines

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["CLI_COMMANDS", "Served", "answer"]

CLI_COMMANDS = ("recall", "store", "list")  # the commands a warm process answers for the CLI
MAX_ARGV = 256
MAX_WIDTH = 10_000


class Served:
    """What the process serves and how it has been used (one per process, shared by its threads)."""

    def __init__(self, store: MemoryStore, embedder: str, idle_seconds: float, log_path: str,
                 stopping: threading.Event) -> None:
        self.store, self.embedder, self.idle_seconds = store, embedder, idle_seconds
        self.log_path, self.stopping = log_path, stopping
        self.started = time.time()
        self.requests = 0
        self.last_request = time.monotonic()
        self.cli_lock = threading.Lock()  # a CLI command's output is captured by redirecting sys.stdout
        self.mcp_lines = McpLines(store)  # for localmem mcp's front end: its SDK server is built on first use


def answer(served: Served, message: dict[str, Any]) -> Any:
    """The ``result`` for one request; ``ValidationError`` (400), ``Mismatch`` (409) or others (500)."""
    op = message.get("op")
    if op == "status":
        return _status(served)
    if op == "stop":
        served.stopping.set()
        return {"pid": os.getpid(), "stopping": True}
    if op not in ("hook", "mcp", "mcp_line", "cli"):
        raise ValidationError(f"unknown op {op!r}: status, stop, hook, mcp, mcp_line or cli")
    if message.get("embedder", "") != served.embedder:
        raise Mismatch(f"this warm process serves embedder {served.embedder or 'the store’s own'!r}, "
                       f"not {message.get('embedder')!r}")
    if op == "hook":
        from ..hooks.forwarded import answer_forwarded

        event = message.get("event")
        if not isinstance(event, str):
            raise ValidationError("'event' must be the hook event's name")
        answered = answer_forwarded(served.store, event, message.get("payload"), message.get("settings", {}))
        return {"answer": answered.output, "report": answered.report}
    if op == "mcp":
        return _mcp(served.store, message)
    if op == "mcp_line":
        return served.mcp_lines.answer(message)
    with served.cli_lock:
        return _cli(served.store, message)


class Mismatch(LocalMemError):
    """The client asks for another embedder than this process serves."""


def _status(served: Served) -> dict[str, Any]:
    store = served.store
    return {"pid": os.getpid(), "store": store.path, "embedder": store.embedder.name if store.embedder else "none",
            "embedder_choice": served.embedder, "started": served.started, "requests": served.requests,
            "idle_for": round(time.monotonic() - served.last_request, 3), "idle_seconds": served.idle_seconds,
            "log": served.log_path, "mcp_server_built": served.mcp_lines.built}


def _mcp(store: MemoryStore, message: dict[str, Any]) -> dict[str, Any]:
    from ..mcp_server.handlers import call_tool

    name, arguments = message.get("name"), message.get("arguments")
    if not isinstance(name, str) or not (arguments is None or isinstance(arguments, dict)):
        raise ValidationError("'name' must be a tool's name and 'arguments' an object")
    output = call_tool(lambda: store, name, arguments)
    return {"texts": list(output.texts), "structured": output.structured, "is_error": bool(output.is_error)}


def _cli(store: MemoryStore, message: dict[str, Any]) -> dict[str, Any]:
    from ..cli import run_forwarded

    argv, width, stdin = message.get("argv"), message.get("width"), message.get("stdin")
    ttys, environ = message.get("ttys"), message.get("environ")
    if (not isinstance(argv, list) or len(argv) > MAX_ARGV or not all(isinstance(a, str) for a in argv)):
        raise ValidationError(f"'argv' must be at most {MAX_ARGV} strings")
    if type(width) is not int or not 0 <= width <= MAX_WIDTH:
        raise ValidationError(f"'width' must be an integer from 0 (not a terminal) to {MAX_WIDTH}")
    if (not isinstance(ttys, list) or len(ttys) != 2 or not all(isinstance(t, bool) for t in ttys)):
        raise ValidationError("'ttys' must say, for stdout and stderr, whether each is a terminal")
    if not isinstance(environ, dict) or not all(k in ("NO_COLOR", "TERM") and isinstance(v, str)
                                                for k, v in environ.items()):
        raise ValidationError("'environ' may hold only NO_COLOR and TERM, as strings")
    if stdin is not None and not isinstance(stdin, str):
        raise ValidationError("'stdin' must be the text the client read for '-'")
    code, stdout, stderr = run_forwarded(argv, store, width=width, ttys=(ttys[0], ttys[1]), environ=environ,
                                         commands=CLI_COMMANDS, stdin=stdin)
    # "stdin": said so a client can tell this from an older warm process, which would not read it
    return {"code": code, "stdout": stdout, "stderr": stderr, **({"stdin": True} if stdin is not None else {})}
