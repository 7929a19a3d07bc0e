"""``localmem trash list|restore|empty``: what sync, pull and merges deleted, kept 30 days."""

from __future__ import annotations

import argparse

from .common import EXIT_OK, AddCommand, open_store
from .output import Output, short


def register(command: AddCommand) -> None:
    """trash."""
    p = command(
        "trash", cmd_trash, "list, restore or empty what sync, pull and merges deleted (kept 30 days)",
        epilog="Every memory an automatic deletion removes (a sync, a pull, a merge) goes to the trash first, "
               "with its edges, and stays restorable for 30 days. A restore is a new edit: the next sync "
               "brings the memory back on peers that deleted it too. 'empty' removes everything in the "
               "trash for good; a purge is the one deletion that never goes there.")
    p.add_argument("action", choices=("list", "restore", "empty"), help="what to do")
    p.add_argument("ids", nargs="*", metavar="ID", help="for restore: the memory ids to put back")
    p.add_argument("--limit", type=int, default=100, metavar="N", help="for list: at most N entries (default 100)")


def cmd_trash(args: argparse.Namespace, out: Output) -> int:
    from ..errors import ValidationError
    from ..trash import empty_trash, restore, trash_entries

    if args.action != "restore" and args.ids:
        raise ValidationError(f"trash {args.action} takes no ids")
    if args.action == "restore" and not args.ids:
        raise ValidationError("trash restore needs the id of at least one trashed memory")
    with open_store(args, must_exist=True) as store:
        if args.action == "list":
            entries = trash_entries(store, args.limit)
            if out.as_json:
                out.json({"status": "success", "count": len(entries), "trash": entries})
            else:
                for entry in entries:
                    out.line(f"{entry['id']}  {entry['trashed_at']}  {entry['reason']}  "
                             f"({entry['edges']} edges)  {short(entry['content'], 60)}")
                out.line(f"{len(entries)} in the trash")
        elif args.action == "restore":
            restored = [restore(store, memory_id)["id"] for memory_id in args.ids]
            if out.as_json:
                out.json({"status": "success", "restored": restored})
            else:
                out.lines(f"restored {memory_id}" for memory_id in restored)
        else:
            count = empty_trash(store)
            if out.as_json:
                out.json({"status": "success", "removed": count})
            else:
                out.line(f"removed {count} memories from the trash for good")
    return EXIT_OK
