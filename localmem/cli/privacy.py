"""forget and audit: removing memories without a trace, and finding what should not be kept."""

from __future__ import annotations

import argparse
from typing import Any

from ..privacy import KINDS
from .common import EXIT_OK, SEEN_BY_OTHERS, AddCommand, open_store, resolve_id, split_list, text_argument
from .output import Output


def register(command: AddCommand) -> None:
    """forget, audit."""
    p = command("forget", cmd_forget,
                "delete memories so that their text is nowhere in the database files (docs/privacy.md)",
                epilog="Deletes with secure_delete, merges the full-text index, rebuilds the file and "
                       "truncates the WAL, so the text is in none of the file, its -wal or its -shm. The "
                       "next 'localmem push' deletes the memories on AutoMem. Backups and exports made "
                       "before are listed: they still hold the text.")
    p.add_argument("ids", nargs="*", metavar="ID", help="memory ids (or unique prefixes, 4+ hex digits)")
    p.add_argument("--matching", metavar="TEXT",
                   help=f"every memory whose content or metadata contains TEXT (case-insensitive; TEXT is "
                        f"{SEEN_BY_OTHERS})")
    p.add_argument("--secrets", action="store_true",
                   help="every memory in which the credential detector finds something")
    p.add_argument("--kind", action="append", metavar="KIND",
                   help=f"with --secrets: only these kinds (comma-separated or repeated), e.g. {KINDS[0]}")
    p.add_argument("--dry-run", action="store_true", help="list what would be forgotten; change nothing")

    p = command("audit", cmd_audit,
                "find stored credentials, duplicates, capture noise and never-recalled memories, "
                "with counts per source",
                epilog="--redact replaces each credential found by [redacted: <kind>] and scrubs the old "
                       "text from the files as 'localmem forget' does.")
    p.add_argument("--redact", action="store_true",
                   help="purge the credentials found (the memories stay, redacted)")
    p.add_argument("--near-sample", type=int, default=2000, metavar="N",
                   help="memories checked for near duplicates (a kNN each; default 2000)")


def cmd_forget(args: argparse.Namespace, out: Output) -> int:
    from ..maintenance.forget import forget, select_targets

    kinds = split_list(args.kind) or []
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        from ..errors import ValidationError
        raise ValidationError(f"--kind: unknown kind(s) {', '.join(unknown)} (known: {', '.join(KINDS)})")
    with open_store(args, must_exist=True) as store:
        ids = [resolve_id(store, given) for given in args.ids]
        matching = text_argument(args.matching, args, one_line=True)
        targets = select_targets(store, ids=ids, matching=matching, secrets=args.secrets, kinds=kinds)
        report = forget(store, [t["id"] for t in targets], dry_run=args.dry_run)
    if out.as_json:
        out.json({"status": "success", **report, "memories": targets})
        return EXIT_OK
    verb = "would forget" if args.dry_run else "forgot"
    for target in targets:
        out.line(f"{verb} {target['id'][:8]}  ({target['reason']})  {target['preview']}")
    out.line(f"{verb} {len(targets) if args.dry_run else report['forgotten']} "
             f"memor{'y' if len(targets) == 1 else 'ies'}")
    _after_lines(report, out)
    return EXIT_OK


def _after_lines(report: dict[str, Any], out: Output) -> None:
    scrub = report.get("scrub") or {}
    if scrub.get("warning"):
        out.note(f"warning: {scrub['warning']}")
    for remote in report.get("push") or []:
        out.line(f"the next 'localmem push' to {remote['remote']} deletes {remote['memories']} of them there")
    copies = [c for c in report.get("copies") or [] if c.get("exists")]
    if copies:
        out.line(f"{len(copies)} backup/export file(s) made before still hold the text; delete them yourself:")
        for copy in copies:
            out.line(f"  {copy['kind']:<6} {copy['at'][:19]}  {copy['path']}")


def cmd_audit(args: argparse.Namespace, out: Output) -> int:
    from ..maintenance.audit import audit

    with open_store(args, must_exist=True) as store:
        report = audit(store, redact=args.redact, near_sample=args.near_sample)
    if out.as_json:
        out.json({"status": "success", **report})
        return EXIT_OK
    out.line(f"{report['memories']} memories")
    for name, label in (("credentials", "holding credentials"), ("exact_duplicates", "exact duplicates"),
                        ("near_duplicates", "near duplicates"), ("noise", "capture noise"),
                        ("never_recalled", "never recalled")):
        section = report[name]
        by_source = ", ".join(f"{source} {n}" for source, n in section["by_source"].items())
        out.line(f"  {label:<22} {section['count']:>7}" + (f"  ({by_source})" if by_source else ""))
        if section.get("note"):
            out.line(f"      {section['note']}")
    if report["credentials"]["kinds"]:
        out.line("  credential kinds: " + ", ".join(f"{k} {n}" for k, n in report["credentials"]["kinds"].items()))
    if args.redact:
        out.line(f"redacted {report['redacted']} memories; the old text was scrubbed from the files")
        _after_lines(report, out)
    elif report["credentials"]["count"]:
        out.line("'localmem audit --redact' replaces them; 'localmem forget --secrets' deletes those memories")
    return EXIT_OK
