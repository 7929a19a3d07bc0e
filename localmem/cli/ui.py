"""The memory browser command: ``localmem ui`` (the same page is at /ui/ under ``localmem serve``)."""

from __future__ import annotations

import argparse
import socket
import sys
import webbrowser

from ..errors import ConfigError, ValidationError
from .common import EXIT_OK, AddCommand, open_store
from .output import Output

HOST = "127.0.0.1"  # the browser is for the person at this machine: loopback only


def register(command: AddCommand) -> None:
    """ui."""
    p = command("ui", cmd_ui, "open the memory browser: a local web page to search, browse, edit and "
                              "graph the store (needs the 'server' extra)")
    p.add_argument("--port", type=int, default=0,
                   help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.add_argument("--log-level", default="warning", help="uvicorn log level (default warning)")


def free_port() -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def cmd_ui(args: argparse.Namespace, out: Output) -> int:
    if isinstance(args.port, bool) or not 0 <= args.port <= 65535:
        raise ValidationError(f"--port {args.port!r}: must be an integer from 0 to 65535 (0: a free one)")
    try:
        import uvicorn

        from ..http.app import create_app
        from ..http.security import resolve_token
        from ..http.server import uvicorn_config
    except ImportError as exc:
        raise ConfigError("The memory browser needs the 'server' extra: pip install 'localmem[server]'") from exc
    port = args.port or free_port()
    with open_store(args) as store:
        app = create_app(store, token=resolve_token(None))
        base = f"http://{HOST}:{port}/ui/"
        # With a token, the browser signs in through a one-time link (it sets an HttpOnly cookie).
        url = f"{base}login?code={app.state.ui_sessions.login_code()}" if app.state.auth_required else base
        if out.as_json:
            out.json({"status": "success", "url": url, "host": HOST, "port": port})
        else:
            out.line(f"localmem memory browser: {url}")
            if app.state.auth_required:
                out.line("(a one-time sign-in link; later visits to /ui/ ask for the API token)")
            out.line("press Ctrl+C to stop")
        sys.stdout.flush()
        if args.open:
            webbrowser.open(url)
        uvicorn.Server(uvicorn_config(app, host=HOST, port=port, log_level=args.log_level)).run()
    return EXIT_OK
