"""``localmem reembed``: embed every memory again, with the database's embedder or a new one."""

from __future__ import annotations

import argparse

from ..errors import ValidationError
from ..text import plural
from .common import EXIT_OK, AddCommand, db_path
from .output import Output


def register(command: AddCommand) -> None:
    """reembed."""
    p = command(
        "reembed", cmd_reembed,
        "embed every memory again with the database's embedder, or switch it to --embedder NAME",
        epilog="With --embedder (any dimension: hash:384, a sentence-transformers model name or folder) the "
               "database moves to that embedder: the new vectors are computed in batches while recall keeps "
               "answering from the old ones, then swapped in at once with a rebuilt vector index, and the new "
               "embedder and dimension are recorded. Stopped (or with --limit), it resumes where it was when "
               "run again with the same embedder. Without --embedder: the embedder the database records.")
    p.add_argument("--batch-size", type=int, default=64, metavar="N", help="memories embedded at a time (default 64)")
    p.add_argument("--limit", type=int, metavar="N",
                   help="embed at most N memories in this run (run again to go on)")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")


def cmd_reembed(args: argparse.Namespace, out: Output) -> int:
    from ..embedders import resolve_embedder
    from ..maintenance.reembed import MAX_BATCH, reembed
    from ..progress import ProgressBar
    from ..settings import choose_embedder
    from .common import open_store

    if not 1 <= args.batch_size <= MAX_BATCH:
        raise ValidationError(f"--batch-size must be between 1 and {MAX_BATCH}")
    if args.limit is not None and args.limit < 1:
        raise ValidationError("--limit must be a positive number")
    path = db_path(args)
    target = resolve_embedder(choose_embedder(getattr(args, "embedder", None), path))
    if target is None:
        raise ValidationError("reembed needs an embedder, not 'none'")
    args.embedder = "none"  # open without the old model: its dimension may differ from the new one
    bar = ProgressBar(0, "re-embedding", stream=out.stderr) if args.progress or out.stderr.isatty() else None
    try:
        with open_store(args, must_exist=True) as store:
            report = reembed(store, target, batch_size=args.batch_size, limit=args.limit, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    if out.as_json:
        out.json(report)
        return EXIT_OK
    before = report["previous"]
    if report["status"] == "complete":
        out.line(f"re-embedded {plural(report['total'], 'memory', 'memories')} with {report['embedder']} "
                 f"({report['dimensions']} dimensions; was {before['embedder']}, {before['dimensions']}) in {report['seconds']} s"
                 + (f", {report['memories_per_second']} memories/s" if report["memories_per_second"] else ""))
    else:
        out.line(f"embedded {plural(report['processed'], 'memory', 'memories')} with {report['embedder']}; "
                 f"{report['remaining']} of "
                 f"{report['total']} to go (run 'localmem reembed' with the same embedder again to go on; "
                 f"recall still uses {before['embedder']} until then)")
    return EXIT_OK
