"""``localmem push URL``: copy the store into an AutoMem (or localmem) server, then keep it in step."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ValidationError
from ..text import plural
from .common import EXIT_ERROR, EXIT_OK, AddCommand, db_path, split_list, token_argument
from .output import Output, counts_text

TOKEN_ENV = "AUTOMEM_API_TOKEN"


def register(command: AddCommand) -> None:
    """push."""
    p = command(
        "push", cmd_push, "copy memories, edges and deletions into an AutoMem (or localmem) server",
        epilog="The first push sends everything; later pushes send only what changed since (updates, new "
               "memories and edges, deletions). The server's ids are kept in the local file, per server, so "
               "a push that was stopped can be run again: it sends nothing twice and loses nothing. "
               "Exit codes: 0 all sent, 1 something failed (listed) or the server could not be reached, "
               "2 bad usage.")
    p.add_argument("url", metavar="URL", help="the server's base URL, such as https://automem.example.com")
    p.add_argument("--token", metavar="T", help=f"the server's API token (default ${TOKEN_ENV}); sent only to URL")
    p.add_argument("--dry-run", action="store_true", help="say what would be sent; send and record nothing")
    p.add_argument("--verify", action="store_true",
                   help="afterwards, compare counts and a sample of memories, edges and recalls with the server")
    p.add_argument("--sample", type=int, default=20, metavar="N", help="memories --verify samples (default 20)")
    p.add_argument("--tags", action="append", metavar="A,B",
                   help="push only memories with one of these tags (or tags under them: 'project' takes "
                        "'project:alpha'; comma-separated or repeated)")
    p.add_argument("--insecure", action="store_true",
                   help="allow plain http:// to a host that is not this machine")
    p.add_argument("--batch-size", type=int, default=100, metavar="N",
                   help="memories or edges per batch request (default 100, at most 500)")
    p.add_argument("--timeout", type=float, default=30.0, metavar="S",
                   help="seconds per request, its whole answer however slowly it comes (default 30)")
    p.add_argument("--retries", type=int, default=4, metavar="N",
                   help="retries of a request after a timeout or a 5xx, with backoff (default 4)")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")


def _check(args: argparse.Namespace) -> None:
    if not 1 <= args.batch_size <= 500:
        raise ValidationError("--batch-size must be between 1 and 500")
    if not 0 < args.timeout <= 3600:
        raise ValidationError("--timeout must be between 0 and 3600 seconds")
    if not 0 <= args.retries <= 20:
        raise ValidationError("--retries must be between 0 and 20")
    if not 1 <= args.sample <= 1000:
        raise ValidationError("--sample must be between 1 and 1000")


def cmd_push(args: argparse.Namespace, out: Output) -> int:
    from ..replication.push import Pusher
    from ..replication.push_client import PushClient
    from ..replication.push_verify import verify
    from ..progress import ProgressBar
    from .common import open_store

    _check(args)
    token = token_argument(args, TOKEN_ENV, out)
    client = PushClient(args.url, token=token, insecure=args.insecure, timeout=args.timeout,
                        retries=args.retries)  # the URL is checked before the store is opened
    args.embedder = "none"  # the stored vectors are sent as they are: no model to load
    show = (args.progress or out.stderr.isatty()) and not args.dry_run
    with client, open_store(args, must_exist=True) as store:
        bar = ProgressBar(0, "connecting", stream=out.stderr) if show else None
        try:
            pusher = Pusher(store, client, tags=split_list(args.tags), dry_run=args.dry_run,
                            batch_size=args.batch_size, progress=bar)
            summary = pusher.run()
            if args.verify and not args.dry_run:
                if bar is not None:
                    bar.restart("verifying", 1)
                summary.verify = verify(pusher, args.sample)
                summary.retried = client.retried
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
    verb = "would push" if report["dry_run"] else "pushed"
    rate = f", {report['memories_per_second']} memories/s" if report.get("memories_per_second") else ""
    out.line(f"{verb} {path} to {report['remote']} ({report['server']}) in {report['seconds']} s{rate}")
    out.line(f"memories: {counts_text(report['memories'])}")
    out.line(f"edges: {counts_text(report['edges'])}")
    embeddings = report["embeddings"]
    out.line(f"embeddings: {embeddings.get('plan')}; {embeddings['sent']} sent, "
             f"{embeddings['server_embedded']} embedded by the server")
    if report["recovered"] or report["duplicates_removed"]:
        out.line(f"interrupted push resumed: {plural(report['recovered'], 'memory', 'memories')} found on the server, "
                 f"{report['duplicates_removed']} duplicates removed")
    if report["adopted"]:
        out.line(f"created again elsewhere: {plural(report['adopted'], 'memory', 'memories')} the server lost "
                 "found there in the same version, created by another store: recorded, not sent twice")
    for item in report["failed"]:
        out.note(f"failed: {item['kind']} {item['id']}: {item['reason']}")
    for item in report["skipped"]:
        out.note(f"skipped: {item['kind']} {item['id']}: {item['reason']}")
    for text in report["warnings"]:
        out.note(f"note: {text}")
    check = report.get("verify")
    if check is not None:
        state = "ok" if check["ok"] else "DIFFERENCES"
        out.line(f"verify: {state}: {check['local_memories']} local memories, {check['mapped']} on the server by "
                 f"id map ({check['not_pushed']} not pushed, {check['pending']} pending, "
                 f"{check['changed_since_push']} changed since); the server counts {check['server_memories']}; "
                 f"sampled {check['sampled']}: {len(check['missing_on_server'])} missing, "
                 f"{len(check['differences'])} field differences, {len(check['recall_missed'])} not recalled, "
                 f"{plural(len(check['edges_missing']), 'edge')} missing")
        if check["vector_not_found"]:
            out.note(f"note: {len(check['vector_not_found'])} sampled memories were not found by their own vector "
                     "(the server re-embedded them after a content change) but were found by their words")
        for diff in check["differences"][:20]:
            out.note(f"differs: {diff['id']} {diff['field']}: local {diff['local']!r}, server {diff['remote']!r}")
