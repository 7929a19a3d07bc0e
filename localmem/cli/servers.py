"""Server commands: the HTTP API (serve) and the MCP stdio server (mcp)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import socket
import sys
from collections.abc import Iterator

from ..errors import LocalMemError, ValidationError
from .common import EXIT_OK, AddCommand, open_store
from .output import Output


class PortInUse(LocalMemError):
    """The port a server was asked to listen on is taken (exit code 1, as any error)."""


def _bindable(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def check_port_number(port: object) -> None:
    """A ``--port`` outside 0-65535 is a usage error naming it (the socket would raise OverflowError)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ValidationError(f"--port {port!r}: must be an integer from 0 to 65535 (0: a free one)")


def check_port(host: str, port: int) -> None:
    """``PortInUse`` naming the port and a free one to try, when ``port`` is taken on ``host``."""
    check_port_number(port)
    if port == 0 or _bindable(host, port):
        return
    other = next((p for p in range(port + 1, min(port + 20, 65536)) if _bindable(host, p)), None)
    try_other = f"try --port {other} or " if other else ""
    raise PortInUse(f"port {port} is in use on {host} ({try_other}stop the other process)")


@contextlib.contextmanager
def starting(host: str, port: int) -> Iterator[None]:
    """uvicorn's exit when it cannot start (the port taken after ``check_port``, say) as an
    error of ours (exit code 1), not its own code 3."""
    try:
        yield
    except SystemExit as exc:
        if exc.code in (None, 0):
            raise
        raise LocalMemError(f"the server could not start on {host}:{port} (the reason is above)") from None


LOG_LEVELS = ("critical", "error", "warning", "info", "debug", "trace")  # uvicorn's
# Said as a server starts at --log-level debug or trace, the levels whose access log shows query strings.
QUERIES_LOGGED = ("the access log shows each request's whole URL, query string included (recall queries, "
                  "?api_key= tokens, sign-in codes); below debug it shows the path and status only")


def log_level_option(parser: argparse.ArgumentParser, default: str) -> None:
    """``--log-level``, one of uvicorn's levels in any case (another is a usage error naming them)."""
    parser.add_argument("--log-level", default=default, type=str.lower, choices=LOG_LEVELS, metavar="LEVEL",
                        help=f"uvicorn log level: {', '.join(LOG_LEVELS)} (default {default}); the access "
                             "log shows query strings only at debug and trace")


# Any local user can connect to a loopback port: said wherever a server starts without a token.
NO_TOKEN = ("without a token: every user of this machine can read and change this store through this port "
            "(set LOCALMEM_API_TOKEN to keep them out; docs/security.md)")


def register(command: AddCommand) -> None:
    """serve, mcp."""
    p = command("serve", cmd_serve, "serve the AutoMem-compatible HTTP API (needs the 'server' extra)",
                epilog="With $LOCALMEM_API_TOKEN (or $AUTOMEM_API_TOKEN) set, every route but /health "
                       "asks for it; an address other than loopback is refused without a token. "
                       "The same port serves the memory browser at /ui/ ('/' leads there) and the MCP "
                       "tools over Streamable HTTP at /mcp (stateless; needs the 'mcp' extra; "
                       "docs/mcp-http.md). A port in use exits 1.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8001, metavar="N", help="port (default 8001)")
    log_level_option(p, "info")
    p.add_argument("--allowed-host", action="append", metavar="NAME",
                   help="a Host name to answer besides loopback ones (repeatable; '*': any; "
                        "default $LOCALMEM_ALLOWED_HOSTS)")
    p.add_argument("--allowed-origin", action="append", metavar="ORIGIN",
                   help="a browser origin allowed to call the API, with CORS, such as "
                        "http://localhost:3000 (repeatable; default $LOCALMEM_ALLOWED_ORIGINS)")

    command("mcp", cmd_mcp, "serve the memory tools to an MCP client over stdio (needs the 'mcp' extra)")


def cmd_serve(args: argparse.Namespace, out: Output) -> int:
    from ..http.policy import request_policy
    from ..http.security import check_bind, resolve_token, resolve_tokens

    token = resolve_token(None)
    # Refuse a non-loopback bind without any token (single or scoped), or a malformed
    # host or origin list, before opening anything.
    any_token = next(iter(resolve_tokens(token)), None)
    check_bind(args.host, any_token)
    request_policy(args.allowed_host, args.allowed_origin, bind_host=args.host)
    from ..http.server import serve

    check_port(args.host, args.port)
    with open_store(args) as store:
        embedder = store.embedder.name if store.embedder is not None else "none"
        where = f"[{args.host}]" if ":" in args.host else args.host
        base = f"http://{where}:{args.port}"
        print(f"localmem serve: database {store.path} (embedder {embedder})\n"
              f"localmem serve: the HTTP API at {base}/ (GET /health, /recall, POST /memory, ...), "
              f"the memory browser at {base}/ui/", file=sys.stderr, flush=True)
        if any_token is None:
            print(f"localmem serve: {NO_TOKEN}", file=sys.stderr, flush=True)
        if args.log_level in ("debug", "trace"):
            print(f"localmem serve: --log-level {args.log_level}: {QUERIES_LOGGED}", file=sys.stderr, flush=True)
        with starting(args.host, args.port):
            serve(store, host=args.host, port=args.port, token=token, log_level=args.log_level,
                  allowed_hosts=args.allowed_host, allowed_origins=args.allowed_origin)
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace, out: Output) -> int:
    from ..mcp_server.__main__ import early_store, stdio_runner, store_factory

    try:
        db, embedder = getattr(args, "db", None), getattr(args, "embedder", None)
        lazy = early_store(store_factory(db, embedder), db, embedder)
        run_stdio = stdio_runner(lazy)
    except ImportError as exc:
        raise LocalMemError(f"the MCP server needs the 'mcp' extra (pip install 'localmem[mcp]'): {exc}") from exc
    run_stdio(lazy)
    return EXIT_OK
