"""``localmem pull URL``: copy an AutoMem deployment into the store, then keep it in step."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ValidationError
from .common import EXIT_ERROR, EXIT_OK, AddCommand, db_path, token_argument
from .output import Output, counts_text

TOKEN_ENV = "AUTOMEM_API_TOKEN"
MAX_ANSWER_MB = 4096


def register(command: AddCommand) -> None:
    """pull."""
    p = command(
        "pull", cmd_pull, "copy memories, edges and deletions from an AutoMem server into this store",
        epilog="The first pull copies everything; later pulls take only what changed there since (new and "
               "changed memories, new edges, deletions AutoMem's listing shows). Memories are embedded here "
               "with the store's model. Ids are kept in the same map as push's, so a push after a pull sends "
               "nothing back. A pull that was stopped can be run again: it stores nothing twice. "
               "Exit codes: 0 all taken, 1 something failed (listed) or the server could not be reached, "
               "2 bad usage.")
    p.add_argument("url", metavar="URL", help="the server's base URL, such as https://automem.example.com")
    p.add_argument("--token", metavar="T", help=f"the server's API token (default ${TOKEN_ENV}); sent only to URL")
    p.add_argument("--dry-run", action="store_true", help="say what would be taken; write and record nothing")
    p.add_argument("--limit", type=int, metavar="N",
                   help="take at most N new or changed memories this time (the rest next time)")
    p.add_argument("--insecure", action="store_true",
                   help="allow plain http:// to a host that is not this machine")
    p.add_argument("--batch-size", type=int, default=100, metavar="N",
                   help="memories written and recorded per transaction (default 100, at most 1000)")
    p.add_argument("--timeout", type=float, default=120.0, metavar="S",
                   help="seconds per request, its whole answer however slowly it comes (default 120: "
                        "the listing is one answer)")
    p.add_argument("--retries", type=int, default=4, metavar="N",
                   help="retries of a request after a timeout or a 5xx, with backoff (default 4)")
    p.add_argument("--max-answer-mb", type=int, default=256, metavar="MB",
                   help="the largest answer read, in MiB (default 256); a larger listing is refused unread")
    p.add_argument("--allow-deletes", type=int, metavar="N",
                   help="let the pull delete up to N local memories; without it, a pull that would delete more "
                        "than a small share of the store (5%%, at least 3) stops before writing")
    p.add_argument("--deadline", type=float, default=6 * 3600.0, metavar="S",
                   help="seconds the whole pull may take, every request included (default 21600)")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")


def _check(args: argparse.Namespace) -> None:
    if not 1 <= args.batch_size <= 1000:
        raise ValidationError("--batch-size must be between 1 and 1000")
    if not 0 < args.timeout <= 3600:
        raise ValidationError("--timeout must be between 0 and 3600 seconds")
    if args.allow_deletes is not None and not 0 <= args.allow_deletes <= 10 ** 9:
        raise ValidationError("--allow-deletes must be a count from 0")
    if not 0 < args.deadline <= 7 * 86400:
        raise ValidationError("--deadline must be between 0 and 604800 seconds (a week)")
    if not 0 <= args.retries <= 20:
        raise ValidationError("--retries must be between 0 and 20")
    if args.limit is not None and not 1 <= args.limit <= 10_000_000:
        raise ValidationError("--limit must be between 1 and 10000000")
    if not 1 <= args.max_answer_mb <= MAX_ANSWER_MB:
        raise ValidationError(f"--max-answer-mb must be between 1 and {MAX_ANSWER_MB}")


def cmd_pull(args: argparse.Namespace, out: Output) -> int:
    from ..replication.pull import Puller
    from ..replication.push_client import PushClient, RemoteError
    from ..progress import ProgressBar
    from .common import open_store

    _check(args)
    token = token_argument(args, TOKEN_ENV, out)
    client = PushClient(args.url, token=token, insecure=args.insecure, timeout=args.timeout,
                        retries=args.retries, max_answer=args.max_answer_mb * 1024 * 1024,
                        total_seconds=args.deadline)
    show = (args.progress or out.stderr.isatty()) and not args.dry_run
    # The server is reached before the store is opened, so a pull that cannot start creates no
    # file; a dry run never creates one (it needs a store to compare with).
    probe = client.get("/health")
    if not probe.ok:
        client.close()
        raise RemoteError(f"GET {client.url}/health answered {probe.status}: {probe.message()}",
                          status=probe.status)
    with client, open_store(args, must_exist=args.dry_run) as store:
        bar = ProgressBar(0, "listing", stream=out.stderr) if show else None
        try:
            summary = Puller(store, client, dry_run=args.dry_run, batch_size=args.batch_size,
                             limit=args.limit, progress=bar, allow_deletes=args.allow_deletes).run()
        finally:
            if bar is not None:
                bar.close()
    report = summary.as_dict()
    if out.as_json:
        out.json(report)
    else:
        _print(out, report, db_path(args))
    return EXIT_OK if summary.ok else EXIT_ERROR


def _print(out: Output, report: dict[str, Any], path: str) -> None:
    verb = "would pull" if report["dry_run"] else "pulled"
    rate = f", {report['memories_per_second']} memories/s" if report.get("memories_per_second") else ""
    listing = "complete" if report["complete_listing"] else "incomplete"
    out.line(f"{verb} {report['remote']} ({report['server']}) into {path} in {report['seconds']} s{rate}")
    out.line(f"listing: {report['listed']} memories ({listing})")
    out.line(f"memories: {counts_text(report['memories'])}")
    out.line(f"edges: {counts_text(report['edges'])}")
    out.line(f"embeddings: {report['embeddings']['plan']}; {report['embeddings']['reembedded']} embedded")
    if report["resumed"]:
        out.line(f"interrupted pull resumed: {report['resumed']} memories were already stored")
    for item in report["failed"]:
        out.note(f"failed: {item['kind']} {item['id']}: {item['reason']}")
    for item in report["skipped"]:
        out.note(f"skipped: {item['kind']} {item['id']}: {item['reason']}")
    for text in report["warnings"]:
        out.note(f"note: {text}")
