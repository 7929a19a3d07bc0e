"""The memory browser command: ``localmem ui`` (the same page is at /ui/ under ``localmem serve``)."""

from __future__ import annotations

import argparse
import functools
import html
import os
import secrets
import shutil
import socket
import sys
import tempfile
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from .common import EXIT_OK, AddCommand, open_store
from .output import Output
from .servers import QUERIES_LOGGED, check_port, check_port_number, log_level_option, starting

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from ..store import MemoryStore
    from ..ui.auth import Sessions

HOST = "127.0.0.1"  # the browser is for the person at this machine: loopback only


def register(command: AddCommand) -> None:
    """ui."""
    p = command("ui", cmd_ui, "open the memory browser: a local web page to search, browse, edit and "
                              "graph the store (needs the 'server' extra)",
                epilog="It prints a one-time sign-in link (--open uses one of its own). Without "
                       "$LOCALMEM_API_TOKEN it makes a secret of its own for the run, never shown, so other "
                       "users of this machine get 401; a second browser needs a new run. docs/browser.md.")
    p.add_argument("--port", type=int, default=0,
                   help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    log_level_option(p, "warning")


def free_port() -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def open_signed_in(sessions: Sessions, base: str) -> Path:
    """Open the browser signed in with a code of its own, without putting the code on a
    command line (where any local user can read it): the browser is started with a page in a
    new private directory (0700, the page 0600) that sends it on to the sign-in link. The
    directory is removed when the code is spent; returned for the caller to remove otherwise."""
    folder = Path(tempfile.mkdtemp(prefix="localmem-ui-"))  # 0700
    code = sessions.login_code(on_redeem=functools.partial(shutil.rmtree, folder, ignore_errors=True))
    target = html.escape(f"{base}login?code={code}", quote=True)
    page = folder / "sign-in.html"
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write('<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
                     f'<meta http-equiv="refresh" content="0; url={target}"><title>localmem</title>'
                     f'<p><a href="{target}">Open the localmem memory browser</a></p>\n')
    webbrowser.open(page.as_uri())
    return folder


def browser_app(store: MemoryStore, hook_secret: str) -> tuple[Starlette, bool]:
    """The browser's app, and whether its admin token is a secret of this run's own.

    Any user of this machine can connect to a loopback port: without an API token configured,
    the app runs as if a new random secret were the admin token. It is never printed, put in
    the environment (which a child such as the web browser inherits) or written anywhere, so
    the browser signs in only through a one-time link (``ui.auth``)."""
    from ..http.app import create_app
    from ..http.security import resolve_token

    configured = resolve_token(None)
    token = configured if configured is not None else secrets.token_urlsafe(32)
    return create_app(store, token=token, hook_secret=hook_secret), configured is None


def cmd_ui(args: argparse.Namespace, out: Output) -> int:
    check_port_number(args.port)
    try:
        import uvicorn  # noqa: F401  (the 'server' extra, named in the error below)

        from ..http.routes_hooks import advertising_server, new_hook_secret
        from ..http.server import uvicorn_config
    except ImportError as exc:
        raise ConfigError("The memory browser needs the 'server' extra: pip install 'localmem[server]'") from exc
    check_port(HOST, args.port)
    port = args.port or free_port()
    with open_store(args) as store:
        hook_secret = new_hook_secret()  # hooks for this store are forwarded here too
        app, per_run = browser_app(store, hook_secret)
        base = f"http://{HOST}:{port}/ui/"
        # The browser signs in through a one-time link (it sets an HttpOnly cookie).
        url = f"{base}login?code={app.state.ui_sessions.login_code()}"
        if out.as_json:
            out.json({"status": "success", "url": url, "host": HOST, "port": port, "per_run_secret": per_run})
        else:
            out.line(f"localmem memory browser: {url}")
            if per_run:
                out.line("(a one-time sign-in link. No API token is set, so this run made a secret of its own "
                         "that keeps other users of this machine out; another browser needs a new run of "
                         "localmem ui, or LOCALMEM_API_TOKEN set)")
            else:
                out.line("(a one-time sign-in link; later visits to /ui/ ask for the API token)")
            out.line("press Ctrl+C to stop")
        if args.log_level in ("debug", "trace"):
            out.note(f"localmem ui: --log-level {args.log_level}: {QUERIES_LOGGED}")
        sys.stdout.flush()
        opened = None
        try:
            if args.open:  # the printed link stays usable too
                opened = open_signed_in(app.state.ui_sessions, base)
            with starting(HOST, port):
                advertising_server(uvicorn_config(app, host=HOST, port=port, log_level=args.log_level),
                                   store, hook_secret).run()
        finally:
            if opened is not None:
                # Its code was never spent. (Ended by SIGTERM, uvicorn exits before this runs; the
                # page left behind is still the user's alone, and its code died with this server.)
                shutil.rmtree(opened, ignore_errors=True)
    return EXIT_OK
