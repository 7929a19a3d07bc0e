"""``localmem daemon status|start|stop|run``: the store's warm process (docs/daemon.md)."""

from __future__ import annotations

import argparse
import os
import time

from ..errors import LocalMemError, ValidationError
from .common import EXIT_ERROR, EXIT_OK, AddCommand, db_path
from .output import Output

START_WAIT = 60.0  # 'daemon start' waits this long for the process to answer (loading the model)


def register(command: AddCommand) -> None:
    """daemon."""
    p = command("daemon", cmd_daemon, "the store's warm process: status, start or stop it",
                epilog="Hooks, 'localmem mcp' and 'localmem recall' start it on their own when it is not "
                       "running, and 'recall', 'store', 'list', the hooks and the MCP tools are answered "
                       "through it while it runs; it exits after --idle seconds without a request "
                       "($LOCALMEM_DAEMON_IDLE, default 1800). $LOCALMEM_DAEMON=0 turns it off. "
                       "See docs/daemon.md.")
    p.add_argument("action", choices=("status", "start", "stop"),
                   help="status: is it running (exit 1 when not); start: start it in the background and "
                        "wait until it answers; stop: ask it to exit and wait until it has")
    p.add_argument("--idle", type=float, metavar="SECONDS",
                   help="with start: exit after this long without a request (default $LOCALMEM_DAEMON_IDLE, "
                        "else 1800)")


def _ask(path: str, op: str, embedder: str = "") -> dict:
    from ..daemon import client

    result = client.ask(path, op, {}, deadline=time.monotonic() + 5.0, embedder=embedder)
    return result if isinstance(result, dict) else {}


def cmd_daemon(args: argparse.Namespace, out: Output) -> int:
    from ..daemon import client, rundir

    path = db_path(args)
    if not rundir.supported():
        raise LocalMemError("the warm process needs Linux (Unix sockets with peer credentials)")
    try:
        where = rundir.where(path)
        idle = client.idle_seconds(args.idle) if args.action == "start" else None
    except (ValueError, rundir.Refused) as exc:
        raise ValidationError(str(exc)) from None
    if args.action == "status":
        try:
            status = _ask(path, "status")
        except client.NotRunning as exc:
            return _report(out, {"running": False, "store": where.store, "socket": where.socket,
                                 "log": where.log, "reason": str(exc)}, EXIT_ERROR)
        return _report(out, {"running": True, **status, "socket": where.socket}, EXIT_OK)
    if args.action == "stop":
        try:
            status = _ask(path, "stop")
        except client.NotRunning as exc:
            return _report(out, {"running": False, "store": where.store, "reason": str(exc)}, EXIT_OK)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline and not client.lock_is_free(where):
            time.sleep(0.05)
        return _report(out, {"running": False, "stopped": status.get("pid")}, EXIT_OK)
    if not os.path.isfile(os.path.expanduser(path)):
        raise LocalMemError(f"no database at {path} (give --db PATH or set $LOCALMEM_DB)")
    embedder = client.embedder_choice(getattr(args, "embedder", None))
    try:
        done = client.start(path, embedder=embedder, idle=idle)
    except client.NotRunning as exc:
        raise LocalMemError(str(exc)) from None
    deadline = time.monotonic() + START_WAIT
    while True:
        try:
            status = _ask(path, "status")
            return _report(out, {"running": True, "note": done, **status, "socket": where.socket}, EXIT_OK)
        except client.NotRunning as exc:
            if time.monotonic() > deadline:
                raise LocalMemError(f"the warm process did not answer within {START_WAIT:g} s ({exc}); "
                                    f"see its log, {where.log}") from None
            time.sleep(0.1)


def _report(out: Output, status: dict, code: int) -> int:
    if out.as_json:
        out.json(status)
        return code
    if status.get("running"):
        idle_left = max(0.0, status.get("idle_seconds", 0) - status.get("idle_for", 0))
        out.line(f"running: pid {status.get('pid')} serves {status.get('store')} (embedder {status.get('embedder')}), "
                 f"{status.get('requests', 0)} requests answered, exits after {idle_left:.0f} s more without one")
        out.line(f"socket: {status.get('socket')}")
        out.line(f"log: {status.get('log')}")
        if "mcp_server_built" in status:
            out.line("MCP server: " + ("built" if status["mcp_server_built"] else "not built (built on the first MCP line)"))
        if status.get("note"):
            out.note(status["note"])
    elif status.get("stopped"):
        out.line(f"stopped: pid {status['stopped']}")
    else:
        out.line(f"not running: {status.get('reason', '')}")
    return code
