"""Commands on single memories: store, get, update, delete (edges: ``edges.py``, by-tag: ``browse.py``).

Every id argument takes a full id or a unique prefix (``common.resolve_id``).
"""

from __future__ import annotations

import argparse
import functools
import json
from datetime import datetime, timezone
from typing import Any

from ..errors import ValidationError
from ..validation import not_current_note
from . import edges
from .common import (
    EXIT_OK, SEEN_BY_OTHERS, AddCommand, add_verbose, json_object, naming, open_store, resolve_id, split_list,
    text_argument, time_option,
)
from .output import Output
from .shown import field_lines, human_time, wrapped


def register(command: AddCommand) -> None:
    """store, get, update, delete."""
    p = command("store", cmd_store, "store a memory and print its id")
    p.add_argument("content", help=f"the memory text ({SEEN_BY_OTHERS})")
    p.add_argument("--tags", action="append", metavar="A,B", help="tags, comma-separated or repeated")
    p.add_argument("--importance", metavar="X", help="importance in [0, 1] (default 0.5)")
    p.add_argument("--confidence", metavar="X",
                   help="confidence in the type, in [0, 1] (default: 0.9 with --type, else the classifier's)")
    p.add_argument("--type", metavar="T",
                   help="memory type: Decision, Pattern, Preference, Style, Habit, Insight or Context "
                        "(default: classified from the content)")
    p.add_argument("--timestamp", metavar="TS", help="creation time, ISO 8601 or an expression such as "
                                                     "'yesterday' (its start) (default: now)")
    p.add_argument("--t-valid", metavar="TS", help="valid from (default: the timestamp)")
    p.add_argument("--t-invalid", metavar="TS", help="valid until")
    p.add_argument("--metadata", metavar="JSON", help="a JSON object")
    p.add_argument("--context", metavar="NAME", help="context (namespace) name (default: default)")
    p.add_argument("--dedup", action="store_true",
                   help="do not store a copy: when the same content (case, spacing and a final '.' or '!' "
                        "aside) is a current memory with the same context and tags, print its id instead "
                        "(said on stderr); near-duplicates are listed on stderr (docs/dedup.md)")
    p.add_argument("--redact", action="store_true",
                   help="replace credentials (API keys, tokens, private keys, passwords) by "
                        "[redacted: <kind>] and drop <private>...</private> regions before storing "
                        "(docs/privacy.md)")
    add_verbose(p)

    p = command("get", cmd_get, "show one memory, its state (current, superseded, expired) and its edges")
    p.add_argument("id", help="memory id, or a unique prefix of it (4+ hex digits)")

    p = command("update", cmd_update, "change fields of a memory (the others keep their values)")
    p.add_argument("id", help="memory id, or a unique prefix of it (4+ hex digits)")
    p.add_argument("--content", metavar="TEXT", help=f"new text, re-embedded ({SEEN_BY_OTHERS})")
    p.add_argument("--tags", action="append", metavar="A,B", help="replace the tags ('' clears them)")
    p.add_argument("--importance", metavar="X", help="new importance in [0, 1]")
    p.add_argument("--confidence", metavar="X", help="new confidence in the type, in [0, 1]")
    p.add_argument("--type", metavar="T", help="new memory type (Decision, Pattern, Preference, Style, "
                                               "Habit, Insight, Context)")
    p.add_argument("--timestamp", metavar="TS", help="new creation time, ISO 8601 or an expression such as "
                                                     "'yesterday' (its start)")
    p.add_argument("--t-valid", metavar="TS", help="valid from this time, ISO 8601")
    p.add_argument("--t-invalid", metavar="TS", help="valid until this time, ISO 8601 ('' clears it: current again)")
    p.add_argument("--metadata", metavar="JSON", help="replace the metadata with this JSON object")
    p.add_argument("--redact", action="store_true",
                   help="redact credentials and drop <private>...</private> regions in the fields given, "
                        "as store --redact does (docs/privacy.md)")

    p = command("delete", cmd_delete, "delete a memory with its edges")
    p.add_argument("id", help="memory id, or a unique prefix of it (4+ hex digits)")



def _store_fields(args: argparse.Namespace, out: Output) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    tags = split_list(args.tags)
    if tags is not None:
        fields["tags"] = tags
    for name in ("importance", "confidence", "type", "timestamp", "t_valid", "t_invalid"):
        value = getattr(args, name, None)
        if name in ("timestamp", "t_valid", "t_invalid"):
            value = time_option(value, "--" + name.replace("_", "-"), out)
        if value is not None:
            fields[name] = value
    if args.metadata is not None:
        fields["metadata"] = json_object(args.metadata, "--metadata")
    return fields


def record_lines(record: dict[str, Any], width: int = 80, now: datetime | None = None) -> list[str]:
    """A memory record as ``field  value`` lines (times to the minute, local; ``now`` adds how long
    ago), then its content, wrapped to ``width`` cells."""
    when = functools.partial(human_time, now=now)
    rows: list[tuple[str, str]] = [
        ("id", record["id"]),
        ("type", f"{record['type']} (confidence {record['confidence']:.2f})"),
        ("importance", f"{record['importance']:.2f}"),
        ("tags", ", ".join(record["tags"]) or "-"),
        ("context", record["context"]),
        ("timestamp", when(record["timestamp"])),
        ("updated_at", when(record["updated_at"])),
        ("last_accessed", when(record["last_accessed"])),
        ("t_valid", human_time(record["t_valid"])),
    ]
    if record.get("t_invalid"):
        rows.append(("t_invalid", human_time(record["t_invalid"])))
    if record.get("archived"):
        rows.append(("archived", "yes"))
    if record.get("relevance_score") is not None:
        rows.append(("relevance", f"{record['relevance_score']:.2f}"))
    if record.get("summary") and record["summary"] != record["content"]:
        rows.append(("summary", record["summary"]))
    if record.get("metadata"):
        rows.append(("metadata", json.dumps(record["metadata"], ensure_ascii=False)))
    lines = field_lines(rows, width)
    lines.append("")
    lines.extend(wrapped(record["content"], width))
    return lines


def cmd_store(args: argparse.Namespace, out: Output) -> int:
    content = text_argument(args.content, args)
    fields = _store_fields(args, out)
    if args.context is not None:
        fields["context"] = args.context
    with open_store(args) as store:
        checked = store.store_checked(content, dedup=args.dedup, redact=args.redact, **fields)
        memory_id = checked["id"]
        redacted = store.get(memory_id)["metadata"].get("redacted") if args.redact else None
        hidden = None if checked["deduped"] else not_current_note(store.get(memory_id), store.now())
        if out.as_json:
            if hidden:
                out.note(f"warning: {hidden}")
            extra = {"similar_existing": checked["similar_existing"]} if args.dedup else {}
            if checked.get("not_applied"):
                extra["not_applied"] = checked["not_applied"]
            out.json({"status": "success", "memory_id": memory_id, "deduped": checked["deduped"], **extra,
                      "memory": store.get(memory_id)})
            return EXIT_OK
        out.line(memory_id)
    if redacted and not checked["deduped"]:
        out.note(f"redacted before storing: {redacted['count']} ({', '.join(redacted['kinds'])})")
    if checked["deduped"]:
        out.note(f"deduplicated: {memory_id} already holds this content (context and tags the same); "
                 "nothing new was stored")
        if checked.get("not_applied"):
            out.note(f"not applied to the existing memory: {', '.join(checked['not_applied'])} "
                     "(use 'localmem update')")
    for similar in checked["similar_existing"]:
        out.note(f"similar existing memory: {similar['id']} (cosine {similar['score']:.3f})")
    if hidden:
        out.note(f"warning: {hidden}")
    return EXIT_OK


def cmd_get(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        memory_id = resolve_id(store, args.id)
        with naming(memory_id):
            record = store.get(memory_id, with_edges=True)  # adds the keys "state" and "edges"
    if out.as_json:
        out.json(record)
    else:
        out.lines(record_lines(record, out.width, datetime.now(timezone.utc)))
        out.line("")
        out.lines(wrapped(f"state: {edges.state_text(record)}", out.width, "  "))
        out.lines(edges.edge_lines(record, out.width))
    return EXIT_OK


def cmd_update(args: argparse.Namespace, out: Output) -> int:
    fields = _store_fields(args, out)
    if args.t_invalid is not None and not args.t_invalid.strip():
        fields["t_invalid"] = None  # clears it (say, after dissociating a supersession)
    if args.content is not None:
        fields["content"] = text_argument(args.content, args)
    if not fields:
        raise ValidationError("nothing to update: give --content, --tags, --importance, --confidence, "
                              "--type, --timestamp, --t-valid, --t-invalid or --metadata")
    with open_store(args, must_exist=True) as store:
        memory_id = resolve_id(store, args.id)
        with naming(memory_id):
            record = store.update(memory_id, redact=args.redact, **fields)
        hidden = not_current_note(record, store.now())
    if hidden:
        out.note(f"warning: {hidden}")
    if out.as_json:
        out.json({"status": "success", "memory_id": record["id"], "memory": record})
    else:
        out.lines(record_lines(record, out.width))
    return EXIT_OK


def cmd_delete(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        memory_id = resolve_id(store, args.id)
        with naming(memory_id):
            store.delete(memory_id)
    if out.as_json:
        out.json({"status": "success", "memory_id": memory_id, "deleted": True})
    else:
        out.line(f"deleted {memory_id}")
    return EXIT_OK


    return EXIT_OK
