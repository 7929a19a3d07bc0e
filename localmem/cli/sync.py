"""``localmem sync PEER``: merge this store and another localmem store (a file or a server), both ways."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from .common import EXIT_ERROR, EXIT_OK, AddCommand, db_path, open_store, token_argument
from .output import Output

TOKEN_ENV = "LOCALMEM_API_TOKEN"
DEFAULT_DEADLINE = 6 * 3600.0


def register(command: AddCommand) -> None:
    """sync."""
    p = command(
        "sync", cmd_sync, "merge this store and another localmem store (a file or a server), both ways",
        epilog="Copies what changed on either side since the two last synced. A memory changed on both "
               "sides: the later change wins and the other is kept as a superseded copy. A delete and an "
               "edit: the later wins. Edges merge as a union. Never copy a live database file between "
               "machines (that corrupts it): sync a copy made with 'localmem backup', or the file itself "
               "on a shared disk. Exit codes: 0 done, 1 something was refused (listed), 2 bad usage.")
    p.add_argument("peer", metavar="PEER",
                   help="the other store: its database file, or the URL of a 'localmem serve' serving it")
    p.add_argument("--token", metavar="T",
                   help=f"a server peer's API token (default ${TOKEN_ENV}); sent only to PEER")
    p.add_argument("--insecure", action="store_true",
                   help="allow plain http:// to a server that is not this machine")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help="seconds per request to a server peer (default 60)")
    p.add_argument("--deadline", type=float, default=DEFAULT_DEADLINE, metavar="S",
                   help=f"seconds the whole sync with a server peer may take (default {DEFAULT_DEADLINE:g})")
    p.add_argument("--dry-run", action="store_true", help="say what would change; write nothing")
    p.add_argument("--allow-deletes", type=int, metavar="N",
                   help="let the sync delete up to N memories in a store; without it, a sync that would "
                        "delete more than a small share (5%%, at least 3) stops before writing")
    p.add_argument("--progress", action="store_true", help="show progress even when stderr is not a terminal")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also say on stderr how each store's join of what it has seen is checked (docs/sync.md)")


def cmd_sync(args: argparse.Namespace, out: Output) -> int:
    from ..replication.sync import sync_stores
    from ..replication.sync_side import StoreSide

    peer = args.peer
    local_path = db_path(args)
    remote = "://" in peer
    if not remote and Path(peer).expanduser().resolve() == Path(local_path).expanduser().resolve():
        raise ValidationError(f"PEER {peer!r} is this store's own file")
    if not 0 < args.timeout <= 3600:
        raise ValidationError("--timeout must be between 0 and 3600 seconds")
    if args.allow_deletes is not None and not 0 <= args.allow_deletes <= 10 ** 9:
        raise ValidationError("--allow-deletes must be a count from 0")
    if not 0 < args.deadline <= 7 * 86400:
        raise ValidationError("--deadline must be between 0 and 604800 seconds (a week)")
    show = args.progress or out.stderr.isatty()
    seen = {"memories": 0, "edges": 0}

    def progress(what: str, count: int) -> None:
        seen[what] += count
        if show:
            sys.stderr.write(f"\rsync: {seen['memories']} memory changes, {seen['edges']} edge changes read")
            sys.stderr.flush()

    if remote:
        from ..replication.push_client import PushClient
        from ..replication.sync_remote import RemoteSide

        token = token_argument(args, TOKEN_ENV, out)
        with PushClient(peer, token=token, insecure=args.insecure, timeout=args.timeout,
                        total_seconds=args.deadline) as client, \
                open_store(args, must_exist=True, read_only=args.dry_run) as local:
            here = StoreSide(local, local_path)
            summary = sync_stores(here, RemoteSide(client, here.store_id), dry_run=args.dry_run,
                                  progress=progress, allow_deletes=args.allow_deletes)
    else:
        from ..replication.peer_file import open_peer_store

        with open_store(args, must_exist=True, read_only=args.dry_run) as local, \
                open_peer_store(peer, dry_run=args.dry_run) as other:
            summary = sync_stores(StoreSide(local, local_path), StoreSide(other, peer),
                                  dry_run=args.dry_run, progress=progress, allow_deletes=args.allow_deletes)
    if show:
        sys.stderr.write("\n")
    report = summary.as_dict()
    if out.as_json:
        out.json(report)
    else:
        _print(out, report, args.verbose)
    return EXIT_ERROR if report["refused"] else EXIT_OK


def _print(out: Output, report: dict[str, Any], verbose: bool = False) -> None:
    verb = "would copy" if report["dry_run"] else "copied"
    out.line(f"{report['local']} <-> {report['peer']}")
    out.line(f"memories: {verb} {report['copied_to_peer']} to the peer and {report['copied_to_local']} here; "
             f"deletions {report['deleted_on_peer']} there and {report['deleted_on_local']} here")
    out.line(f"edges: {report['edges_to_peer']} to the peer, {report['edges_to_local']} here")
    for conflict in report["conflicts"]:
        out.line(f"conflict: {conflict['id']} changed on both; the later change won, the other is kept "
                 f"as {conflict['kept_as']} (superseded)")
    for memory_id in report["edits_kept_over_deletes"]:
        out.line(f"kept: {memory_id} was deleted on one side and edited on the other without seeing "
                 "the delete; the edit stays")
    for item in report["refused"]:
        out.note(f"refused: {item['id']} on {item['side']}: {item['reason']}")
    if report.get("full_comparison"):
        out.note(f"compared everything: {report['full_comparison']}")
    if verbose:
        out.note(f"seen: {report['seen_window']}" if report.get("seen_window") else
                 "seen: each store joins what a sync merged into what it has seen only where the memory is still "
                 "the version the sync left there, checked inside the join's transaction on both stores")
    out.line(f"vectors: {report['vectors']}")
