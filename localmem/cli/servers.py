"""Server commands: the HTTP API (serve) and the MCP stdio server (mcp)."""

from __future__ import annotations

import argparse

from ..errors import LocalMemError
from .common import EXIT_OK, AddCommand, open_store
from .output import Output


def register(command: AddCommand) -> None:
    """serve, mcp."""
    p = command("serve", cmd_serve, "serve the AutoMem-compatible HTTP API (needs the 'server' extra)",
                epilog="With $LOCALMEM_API_TOKEN (or $AUTOMEM_API_TOKEN) set, every route but /health "
                       "asks for it; an address other than loopback is refused without a token. "
                       "The same port serves the memory browser at /ui/ and the MCP tools over "
                       "Streamable HTTP at /mcp (stateless; needs the 'mcp' extra; docs/mcp-http.md).")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8001, metavar="N", help="port (default 8001)")
    p.add_argument("--log-level", default="info", metavar="LEVEL",
                   help="uvicorn log level: critical, error, warning, info (default) or debug")
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
    check_bind(args.host, next(iter(resolve_tokens(token)), None))
    request_policy(args.allowed_host, args.allowed_origin, bind_host=args.host)
    from ..http.server import serve

    with open_store(args) as store:
        serve(store, host=args.host, port=args.port, token=token, log_level=args.log_level,
              allowed_hosts=args.allowed_host, allowed_origins=args.allowed_origin)
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace, out: Output) -> int:
    from ..mcp_server.__main__ import early_store, stdio_runner, store_factory

    try:
        lazy = early_store(store_factory(getattr(args, "db", None), getattr(args, "embedder", None)))
        run_stdio = stdio_runner(lazy)
    except ImportError as exc:
        raise LocalMemError(f"the MCP server needs the 'mcp' extra (pip install 'localmem[mcp]'): {exc}") from exc
    run_stdio(lazy)
    return EXIT_OK
