"""Maintenance commands: import, export, stats, doctor, backup, restore."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError, ValidationError
from ..storage.database import MEMORY_PATH
from .common import EXIT_ERROR, EXIT_OK, AddCommand, db_path, open_store
from ..text import plural
from .output import Output, human_size
from .shown import field_lines, human_time

if TYPE_CHECKING:
    from ..maintenance.import_result import KindCounts


def register(command: AddCommand) -> None:
    """import, export, stats, doctor, backup, restore."""
    p = command("import", cmd_import, "import memories and edges from JSONL (as written by export)",
                epilog="All or nothing: the whole file is checked (each line as 'store' or 'associate' would "
                       "check it) and then written in one transaction, or nothing is written, so a failed import "
                       "can be run again as it is. A memory id or edge that already exists is an error unless "
                       "--skip-existing or --update (running a finished import again with either changes "
                       "nothing; lines without an id are new memories every time). Vectors in "
                       "the file are stored as they are: create the target database with the same --embedder "
                       "as the exporting one (or use --reembed).")
    p.add_argument("file", metavar="FILE", help="JSONL file, or '-' for stdin")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    p.add_argument("--batch-size", type=int, default=1000, metavar="N",
                   help="lines checked and embedded at a time (default 1000); with --chunked, "
                        "memories per transaction")
    existing = p.add_mutually_exclusive_group()
    existing.add_argument("--skip-existing", action="store_true",
                          help="leave memories and edges that already exist as they are (counted as skipped)")
    existing.add_argument("--update", action="store_true",
                          help="change existing memories and edges to the fields their lines give")
    p.add_argument("--chunked", action="store_true",
                   help="commit every --batch-size memories on their own instead of all or nothing: an error "
                        "keeps the earlier chunks, and --skip-existing resumes (for files too big for one "
                        "transaction)")
    p.add_argument("--embed-missing", action="store_true",
                   help="also embed memories exported without an embedding")
    p.add_argument("--reembed", action="store_true",
                   help="ignore the file's vectors and embed everything with this database's embedder")

    p = command("export", cmd_export, "export every memory (with its vector) and edge as JSONL")
    p.add_argument("file", nargs="?", default="-", metavar="FILE", help="output file, or '-' for stdout (default)")
    p.add_argument("--force", action="store_true",
                   help="overwrite FILE even when it is not an earlier export (one is overwritten anyway)")
    p.add_argument("--no-sync-stamps", dest="sync_stamps", action="store_false",
                   help="leave out each memory's sync stamp (a localmem older than the field refuses it; "
                        "without it, an import here is a new version, docs/sync.md)")

    p = command("stats", cmd_stats, "counts, types and top tags")
    p.add_argument("--top", type=int, default=10, metavar="N", help="how many tags to list (default 10)")

    p = command("doctor", cmd_doctor, "check that memories, full-text, vectors, tags and edges agree")
    p.add_argument("--repair", action="store_true",
                   help="rebuild the derived indexes and embed memories that have no embedding")

    p = command("backup", cmd_backup,
                "copy the database to DEST with SQLite's online backup (consistent while other processes write)")
    p.add_argument("dest", metavar="DEST", help="the backup file to write (mode 0600); a folder (a path "
                   "ending in '/', or an existing directory) gets a dated file inside, and is created if missing")
    p.add_argument("--force", action="store_true", help="overwrite DEST if it exists")

    p = command("restore", cmd_restore,
                "replace the database's contents with a backup made by 'localmem backup' "
                "(the current contents are saved beside it first)")
    p.add_argument("src", metavar="SRC", help="the backup file to restore")


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fp:
        return sum(1 for line in fp if line.strip())


def cmd_import(args: argparse.Namespace, out: Output) -> int:
    """``_import``; a failed import into a database file it created removes that file again, so
    retrying with the file's own --embedder (as the refusal advises) finds no file in the way."""
    target = Path(db_path(args)).expanduser()
    new_file = getattr(args, "warm_store", None) is None and str(target) != MEMORY_PATH and not target.exists()
    try:
        return _import(args, out)
    except LocalMemError as exc:
        if new_file and target.exists() and _discard_empty(target):
            exc.message += f"; {target}, made for this import, was not kept"
            exc.args = (exc.message,)
        raise


def _discard_empty(path: Path) -> bool:
    """Remove a database file (and its -wal/-shm) that holds no memory and no edge; whether it did."""
    from ..store import MemoryStore

    with MemoryStore(path, embedder="none") as store:
        health = store.health()
        if health["memory_count"] or health["edge_count"]:
            return False
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    return True


def _import(args: argparse.Namespace, out: Output) -> int:
    from ..progress import ProgressBar
    from ..maintenance.importer import Importer

    show_progress = args.progress or out.stderr.isatty()
    with ExitStack() as stack:
        lines: Iterable[str]
        if args.file == "-":
            stdin = sys.stdin
            if hasattr(stdin, "reconfigure") and (stdin.encoding or "").lower().replace("-", "") != "utf8":
                stdin.reconfigure(encoding="utf-8")
            lines = list(stdin) if show_progress else stdin  # counted for the bar
            total = sum(1 for line in lines if line.strip()) if show_progress else 0
        else:
            path = Path(args.file).expanduser()
            if not path.is_file():
                raise LocalMemError(f"no such file: {args.file}")
            total = _count_lines(path) if show_progress else 0
            lines = stack.enter_context(open(path, encoding="utf-8-sig"))
        store = stack.enter_context(open_store(args))
        label = "importing" if args.chunked else "checking"  # all or nothing: checked, then written
        bar = ProgressBar(total, label, stream=out.stderr) if show_progress else None
        if bar is not None:
            stack.callback(bar.close)
        importer = stack.enter_context(Importer(
            store, chunk_size=args.batch_size, progress=bar, embed_missing=args.embed_missing,
            reembed=args.reembed, skip_existing=args.skip_existing, update=args.update, chunked=args.chunked))
        try:
            for lineno, text in enumerate(lines, 1):
                importer.feed(lineno, text)
            result = importer.finish()
        except ValidationError as exc:
            kept = importer.result
            if not args.chunked:
                exc.message += " (nothing was imported)"
            elif kept.memories or kept.edges:
                done = plural(kept.memories, "memory", "memories") + (
                    f" and {plural(kept.edges, 'edge')}" if kept.edges else "")
                exc.message += f" (nothing of that chunk was written; {done} from earlier chunks were imported)"
            exc.args = (exc.message,)
            raise
        embedder_error = store.embedder_error
    if out.as_json:
        out.json({"status": "success", **result.as_dict()})
    else:
        out.line(f"imported {plural(result.memories, 'memory', 'memories')} and {plural(result.edges, 'edge')} "
                 f"({_import_counts('memories', result.memory)}; {_import_counts('edges', result.edge)})")
    if result.older:
        out.note(f"note: {plural(len(result.older), 'memory', 'memories')} set back to an older version (the file's "
                 f"updated_at is earlier than the stored one's): {', '.join(result.older[:10])}"
                 + (f" and {len(result.older) - 10} more (--json lists them)" if len(result.older) > 10 else ""))
    if result.stamps.not_taken:
        reasons = "; ".join(f"{why}: {count}" for why, count in sorted(result.stamps.not_taken.items()))
        out.note(f"note: {plural(sum(result.stamps.not_taken.values()), 'memory was', 'memories were')} written as "
                 f"new versions made here, not as the exported ones their sync stamps name ({reasons})")
    if result.not_embedded:
        out.note(f"warning: {plural(result.not_embedded, 'memory was', 'memories were')} stored without an embedding "
                 f"({embedder_error or 'the embedder is unavailable'}); run 'localmem doctor --repair' "
                 "with a working embedder to add them")
    if result.without_token_codes:
        out.note(f"note: {plural(result.without_token_codes, 'memory', 'memories')} came with the file's vectors "
                 f"and no usable token codes ({result.token_codes_kept}), so recall scores them by cosine "
                 "alone; 'localmem reembed' (or importing with --reembed) adds them")
    return EXIT_OK


def _import_counts(kind: str, counts: KindCounts) -> str:
    """``memories: 3 created, 1 skipped``: created always, the rest when they happened."""
    parts = [f"{counts.created} created"] + [f"{getattr(counts, name)} {name}" for name in
                                            ("updated", "unchanged", "skipped") if getattr(counts, name)]
    return f"{kind}: {', '.join(parts)}"


def cmd_export(args: argparse.Namespace, out: Output) -> int:
    from ..maintenance.export import export_file, export_jsonl

    with open_store(args, must_exist=True) as store:
        if args.file == "-":
            stream = out.stdout
            if (hasattr(stream, "reconfigure")
                    and (getattr(stream, "encoding", "") or "").lower().replace("-", "") != "utf8"):
                stream.reconfigure(encoding="utf-8")
            export_jsonl(store, stream, stamps=args.sync_stamps)
            stream.flush()
            return EXIT_OK
        target = Path(args.file).expanduser()
        memories, edges = export_file(store, target, overwrite=args.force,  # synced, renamed; never the db
                                      stamps=args.sync_stamps)
    if out.as_json:
        out.json({"status": "success", "path": str(target), "memories": memories, "edges": edges})
    else:
        out.line(f"exported {plural(memories, 'memory', 'memories')} and {plural(edges, 'edge')} to {target}")
    return EXIT_OK


def _state_text(counts: dict[str, int]) -> str:
    """``1 current; recall hides 1: 1 superseded`` (the reasons recall gives)."""
    if not counts["not_current"]:
        return f"{counts['current']} current; recall hides none"
    labels = (("superseded", "superseded"), ("expired", "expired"), ("archived", "archived"),
              ("not_yet_valid", "not yet valid"))
    reasons = ", ".join(f"{counts[key]} {label}" for key, label in labels if counts[key])
    text = f"{counts['current']} current; recall hides {counts['not_current']}: {reasons}"
    if counts["replaced"]:
        text += f"; {counts['replaced']} of them replaced by a current memory"
    return text


def stats_lines(stats: dict[str, Any], width: int = 80) -> list[str]:
    def counts(mapping: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in mapping.items()) or "-"

    embedder = stats["embedder"]
    dims = f"{embedder['dimensions']} dimensions" if embedder.get("dimensions") else "no vector index"
    embedder_text = f"{embedder['name']}, {dims}"
    if embedder.get("recorded") and embedder["recorded"] != embedder["name"]:
        embedder_text += f" (database made with {embedder['recorded']})"
    if embedder.get("error"):
        embedder_text += f" - unavailable: {embedder['error']}"
    if embedder.get("query_int8"):
        embedder_text += f"; {QUERY_INT8_NOTE}"
    rows = [
        ("database", f"{stats['path']} ({human_size(stats['file_size_bytes'])}, schema {stats['schema_version']})"),
        ("embedder", embedder_text),
        ("memories", f"{stats['memory_count']} ({_state_text(stats['state_counts'])})"),
        ("indexes", (f"{plural(stats['fts_count'], 'full-text row')}, "
                     f"{plural(stats['embedding_count'], 'embedding')}, "
                     f"{plural(stats['vector_count'], 'vector')}, {plural(stats['tag_count'], 'tag row')} - "
                     + ("agree" if stats["indexes_agree"] else "DISAGREE (run localmem doctor)"))),
        ("edges", f"{stats['edge_count']}" + (f" ({counts(stats['edge_types'])})" if stats["edge_types"] else "")),
        ("time span", f"{human_time(stats['oldest'])} to {human_time(stats['newest'])}" if stats["oldest"] else "-"),
        ("types", counts(stats["types"])),
        ("contexts", counts(stats["contexts"])),
        ("top tags", ", ".join(f"{t['tag']} {t['count']}" for t in stats["top_tags"]) or "-"),
    ]
    if stats["memories_without_embedding"]:
        rows.insert(4, ("no vector", plural(stats['memories_without_embedding'], 'memory has', 'memories have')
                        + " no embedding"))
    uncoded = stats["embedding_count"] - stats["token_coded_count"]
    if stats["token_evidence"] and uncoded > 0:
        rows.insert(4, ("token codes", plural(uncoded, "embedded memory has", "embedded memories have")
                        + " none (stored before schema 8, imported with their file's vectors, or given "
                          "their own): "
                          "`localmem reembed` adds them"))
    return field_lines(rows, width)


def cmd_stats(args: argparse.Namespace, out: Output) -> int:
    from ..maintenance.stats import collect_stats

    with open_store(args, must_exist=True) as store:
        stats = collect_stats(store, args.top)
    if out.as_json:
        out.json(stats)
    else:
        out.lines(stats_lines(stats, out.width))
    return EXIT_OK


def _check_lines(checks: list[Any]) -> list[str]:
    lines = []
    for item in checks:
        if item.skipped:
            status, text = "skipped", f"{item.description} ({item.skipped})"
        elif item.ok:
            status, text = "ok", item.description
        else:
            status = "PROBLEM" if item.severity == "problem" else "warning"
            text = item.message
            if item.sample:
                more = f", ... ({item.count} in all)" if item.count > len(item.sample) else ""
                text += ": " + ", ".join(item.sample) + more
        lines.append(f"  {status:<8} {text}")
    return lines


def _daemon_report(path: str) -> dict[str, Any]:
    from ..daemon import client

    return client.describe(path) if path != ":memory:" else {"state": "off", "reason": "the store is in memory"}


def _daemon_line(daemon: dict[str, Any]) -> str:
    """``warm process: running (pid 123, 45 requests; log ...)``: not a check, what answers the clients."""
    if daemon["state"] == "running":
        return (f"warm process: running (pid {daemon.get('pid')}, {daemon.get('requests', 0)} requests answered; "
                f"log {daemon.get('log')})")
    where = f"; log {daemon['log']}" if daemon.get("log") else ""
    return f"warm process: {daemon['state']} ({daemon.get('reason', '')}{where})"


QUERY_INT8_NOTE = ("queries through the int8 query graph (LOCALMEM_QUERY_INT8=1: faster, "
                   "answers differ slightly from the float model's)")


def cmd_doctor(args: argparse.Namespace, out: Output) -> int:
    from ..maintenance import doctor

    with open_store(args, must_exist=True) as store:
        checks = doctor.check(store)
        found = doctor.problems(checks)
        report: dict[str, Any] = {"path": store.path, "checks": [c.as_dict() for c in checks],
                                  "problem_count": len(found)}
        if not out.as_json:
            out.line(f"checking {store.path}")
            out.lines(_check_lines(checks))
        final = found
        if args.repair:
            actions = doctor.repair(store, progress=out.stderr.isatty())
            after = doctor.check(store)
            final = doctor.problems(after)
            report["repair"] = actions
            report["after_repair"] = [c.as_dict() for c in after]
            if not out.as_json:
                done = [plural(actions.get('fts_rows_rebuilt', 0), 'full-text row') + " rebuilt",
                        plural(actions.get('memories_retagged', 0), 'memory', 'memories') + " re-tagged"]
                if "vector_rows_rebuilt" in actions:
                    done.append(plural(actions['vector_rows_rebuilt'], 'vector row') + " rebuilt")
                done.append(plural(actions.get('memories_embedded', 0), 'memory', 'memories') + " embedded")
                for key, label in (("dangling_edges_removed", "dangling edge"),
                                   ("invalid_embeddings_removed", "invalid embedding")):
                    if actions.get(key):
                        done.append(plural(actions[key], label) + " removed")
                out.line("")
                out.line("repair: " + ", ".join(done))
                if actions.get("embedder_error"):
                    out.line(f"  could not embed: {actions['embedder_error']}")
                if actions.get("unusable_embeddings_removed"):
                    sample = actions["unusable_embeddings_sample"]
                    for key, label in (("reembedded", "re-embedded"),
                                       ("dropped", "dropped, served without a vector")):
                        if actions[f"unusable_embeddings_{key}"]:
                            out.line(f"  unusable embeddings {label}: {actions[f'unusable_embeddings_{key}']}"
                                     f" ({', '.join(sample[key])}"
                                     f"{', ...' if actions[f'unusable_embeddings_{key}'] > len(sample[key]) else ''})")
                remaining = [c for c in after if not c.ok]
                if remaining:
                    out.line("after repair:")
                    out.lines(_check_lines(remaining))
    report["status"] = "ok" if not final else "problems"
    report["remaining_problem_count"] = len(final)
    report["daemon"] = _daemon_report(store.path)
    from ..hooks import installed

    report["hooks"] = installed.installed()
    report["query_int8"] = bool(getattr(store.embedder, "query_int8", False))
    if out.as_json:
        out.json(report)
        return EXIT_OK if not final else EXIT_ERROR
    out.line(_daemon_line(report["daemon"]))
    if report["query_int8"]:
        out.line(QUERY_INT8_NOTE)
    out.lines(installed.describe(report["hooks"], store.path))
    if not final:
        out.line("no problems found" if not args.repair else "no problems remain")
    else:
        hint = "" if args.repair else "; 'localmem doctor --repair' rebuilds the derived indexes"
        if any(c.name == "integrity" for c in final):
            hint += "; the file itself is damaged: restore it from an export or a backup"
        out.line(f"{plural(len(final), 'problem')} found{hint}")
    return EXIT_OK if not final else EXIT_ERROR


def cmd_backup(args: argparse.Namespace, out: Output) -> int:
    from ..maintenance.backup import backup_database

    path = db_path(args)
    if path == MEMORY_PATH:
        raise ValidationError("an in-memory database cannot be backed up; give --db PATH")
    result = backup_database(path, args.dest, overwrite=args.force)
    if out.as_json:
        out.json(result)
    else:
        out.line(f"backed up {plural(result['memories'], 'memory', 'memories')} and "
                 f"{plural(result['edges'], 'edge')} to {result['path']} "
                 f"({human_size(result['bytes'])}, schema {result['schema_version']})")
    return EXIT_OK


def cmd_restore(args: argparse.Namespace, out: Output) -> int:
    from ..maintenance import doctor
    from ..maintenance.backup import restore_database

    path = db_path(args)
    if path == MEMORY_PATH:
        raise ValidationError("cannot restore into an in-memory database; give --db PATH")
    result = restore_database(args.src, path)
    with open_store(args, path=path) as store:  # migrates a backup from an older localmem
        health = store.health()
        found = doctor.problems(doctor.check(store))
    result.update({"schema_version": health["schema_version"], "memories": health["memory_count"],
                   "edges": health["edge_count"], "problem_count": len(found)})
    if out.as_json:
        out.json(result)
    else:
        out.line(f"restored {plural(result['memories'], 'memory', 'memories')} and "
                 f"{plural(result['edges'], 'edge')} from {result['source']} "
                 f"into {result['path']}")
        if result["saved_previous"]:
            out.line(f"the previous contents were saved to {result['saved_previous']}")
        if found:
            out.line(f"{plural(len(found), 'problem')} found: run 'localmem doctor' for details")
    return EXIT_OK if not found else EXIT_ERROR
