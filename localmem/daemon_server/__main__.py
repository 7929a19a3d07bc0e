"""``python -m localmem.daemon_server --db PATH [--embedder NAME] [--idle SECONDS]``: serve the
store's warm process in this process (what ``localmem daemon start`` and the clients start,
detached, with its output to the log)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from ..daemon import client, rundir
from ..errors import LocalMemError
from .process import AlreadyRunning, serve


def _say(text: str) -> None:
    print(time.strftime("%Y-%m-%dT%H:%M:%S ") + text, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localmem.daemon_server",
                                     description="Serve one store's warm process on its Unix socket.")
    parser.add_argument("--db", required=True, metavar="PATH", help="the database file (must exist)")
    parser.add_argument("--embedder", default="", metavar="NAME", help="as 'localmem --embedder'")
    parser.add_argument("--idle", type=float, metavar="SECONDS",
                        help=f"exit after this long without a request (default ${client.IDLE_ENV}, else "
                             f"{client.DEFAULT_IDLE_SECONDS})")
    args = parser.parse_args(argv)
    try:
        idle = client.idle_seconds(args.idle)
    except ValueError as exc:
        parser.error(str(exc))
    if not os.path.isfile(args.db):
        _say(f"localmem daemon: no database at {args.db}; not started")
        return 1

    def open_store() -> object:
        from ..settings import choose_embedder, opens_read_only
        from ..store import MemoryStore

        return MemoryStore(args.db, embedder=choose_embedder(args.embedder or None, args.db),
                           read_only=opens_read_only(args.db))

    try:
        serve(args.db, open_store, embedder=args.embedder.strip(), idle=idle, say=_say)
    except AlreadyRunning as exc:
        _say(f"localmem daemon: {exc.message}; this one exits")
    except (LocalMemError, rundir.Refused, OSError) as exc:
        _say(f"localmem daemon: not started: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
