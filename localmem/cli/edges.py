"""Commands on edges between memories: associate, dissociate, supersede; and how
``get`` shows a memory's state and edges."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import LocalMemError, ValidationError
from ..relations import AUTHORABLE_TYPES, SUPERSESSION_TYPES, supersession_meaning
from ..text import plural
from .common import (
    EXIT_OK, SEEN_BY_OTHERS, AddCommand, json_object, open_store, resolve_id, split_list, text_argument, time_option,
)
from .output import Output, short
from .shown import human_time, wrapped

if TYPE_CHECKING:
    from ..store import MemoryStore

DIRECTION = ("Direction matters: ID1 -[INVALIDATED_BY]-> ID2 and ID1 -[EVOLVED_INTO]-> ID2 mean ID1 is "
             "superseded by ID2, so recall hides ID1 and shows ID2 in its place. To replace OLD by NEW, "
             "run 'localmem supersede OLD --id NEW' (it also marks OLD invalid).")
# How many edges per direction ``get`` lists for people (--json lists them all).
GET_EDGE_LINES = 20


def register(command: AddCommand) -> None:
    """associate, dissociate, supersede."""
    p = command("associate", cmd_associate, "link two memories: ID1 -[TYPE]-> ID2",
                epilog=DIRECTION + " Linking a pair again with the same type updates that edge "
                       "(and says from what strength); 'localmem dissociate' removes edges.")
    p.add_argument("id1", help="the source memory (for INVALIDATED_BY / EVOLVED_INTO: the superseded one)")
    p.add_argument("id2", help="the target memory (for INVALIDATED_BY / EVOLVED_INTO: the replacement)")
    p.add_argument("--type", default="RELATES_TO", metavar="T",
                   help="relation type, case-insensitive (default RELATES_TO): " + ", ".join(AUTHORABLE_TYPES))
    p.add_argument("--strength", default=None, metavar="S", help="strength in [0, 1] (default 0.5)")

    p = command("dissociate", cmd_dissociate, "remove the edges ID1 -> ID2 (of one --type, or all of them)",
                epilog="Only edges from ID1 to ID2 are removed; ID2 -> ID1 edges stay. Removing a "
                       "supersession edge does not clear the t_invalid that 'supersede' set: "
                       "'localmem update ID1 --t-invalid \"\"' does.")
    p.add_argument("id1", help="the source memory (id or unique prefix)")
    p.add_argument("id2", help="the target memory (id or unique prefix)")
    p.add_argument("--type", default=None, metavar="T", help="only edges of this type (default: every type)")

    p = command("supersede", cmd_supersede,
                "replace OLD by a new memory (NEW_CONTENT) or an existing one (--id NEW): recall then hides OLD",
                epilog="Atomically: stores NEW_CONTENT (with the store options) unless --id is given, "
                       "sets OLD's t_invalid to now, records superseded_by in OLD's metadata and links "
                       "OLD -[RELATION]-> NEW (strength 0.9).")
    p.add_argument("old", metavar="OLD", help="the memory being replaced (id or unique prefix)")
    p.add_argument("content", nargs="?", metavar="NEW_CONTENT",
                   help=f"text of the replacing memory ({SEEN_BY_OTHERS})")
    p.add_argument("--id", dest="new_id", metavar="NEW", help="an existing memory that replaces OLD")
    p.add_argument("--relation", default="INVALIDATED_BY", type=str.upper, choices=SUPERSESSION_TYPES,
                   help="INVALIDATED_BY (default: a correction) or EVOLVED_INTO (a newer version)")
    p.add_argument("--reason", metavar="TEXT", help="why; kept on the edge and in OLD's metadata")
    p.add_argument("--tags", action="append", metavar="A,B", help="tags of the new memory")
    p.add_argument("--importance", metavar="X", help="importance of the new memory")
    p.add_argument("--confidence", metavar="X", help="confidence in the new memory's type, in [0, 1]")
    p.add_argument("--type", metavar="T", help="memory type of the new memory")
    p.add_argument("--metadata", metavar="JSON", help="metadata of the new memory, a JSON object")
    p.add_argument("--context", metavar="NAME", help="context (namespace) of the new memory")
    p.add_argument("--timestamp", metavar="TS", help="creation time of the new memory, ISO 8601 or an "
                   "expression such as 'yesterday' (its start) (default: now; OLD is invalid as of now)")


def _starts(store: MemoryStore, *memory_ids: str) -> list[str | None]:
    """The start of each memory's text, so a reversed pair is plain to see."""
    texts: list[str | None] = []
    for memory_id in memory_ids:
        try:
            texts.append(short(store.get(memory_id)["content"], 40))
        except LocalMemError:
            texts.append(None)
    return texts


def _warn(out: Output, result: dict[str, Any]) -> None:
    for warning in result.get("warnings", ()):
        out.note(f"warning: {warning}")


def cmd_associate(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        edge = store.associate(resolve_id(store, args.id1, "memory1_id"),
                               resolve_id(store, args.id2, "memory2_id"), args.type, args.strength)
        texts = _starts(store, edge["memory1_id"], edge["memory2_id"])
        # What the edge did, by recall's own rule (its successor must be current, or lead to one).
        state = (store.get(edge["memory1_id"], with_edges=True)["state"]
                 if edge["relation_type"] in SUPERSESSION_TYPES else None)
    _warn(out, edge)
    if out.as_json:
        out.json({"status": "success", **edge})
        return EXIT_OK
    change = (f"updated from {edge['previous_strength']:.2f}" if edge.get("updated") else "new edge")
    out.line(f"{edge['memory1_id']} -[{edge['relation_type']}]-> {edge['memory2_id']} "
             f"(strength {edge['strength']:.2f}, {change})")
    if state is None:
        return EXIT_OK
    head = state.get("superseded_by")
    if head is None:
        out.line(f"{edge['memory2_id']} is not current itself, nor does it lead to a current memory, so "
                 f"recall does not treat {edge['memory1_id']} as superseded by it")
    elif head == edge["memory2_id"]:
        out.line(supersession_meaning(edge["relation_type"], edge["memory1_id"], edge["memory2_id"], *texts)
                 or "")
    else:
        out.line(f"{edge['memory1_id']} is now superseded by {edge['memory2_id']}, which is itself superseded: "
                 f"recall hides \"{texts[0]}\" and shows {head}, the current end of the chain, in its place")
    return EXIT_OK


def cmd_dissociate(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        result = store.dissociate(resolve_id(store, args.id1, "memory1_id"),
                                  resolve_id(store, args.id2, "memory2_id"), args.type)
    _warn(out, result)
    if out.as_json:
        out.json({"status": "success", **result})
        return EXIT_OK
    count = result["removed"]
    out.line(f"removed {plural(count, 'edge')} {result['memory1_id']} -> "
             f"{result['memory2_id']} ({', '.join(result['removed_types'])})")
    return EXIT_OK


def cmd_supersede(args: argparse.Namespace, out: Output) -> int:
    fields: dict[str, Any] = {}
    tags = split_list(args.tags)
    if tags is not None:
        fields["tags"] = tags
    for name in ("importance", "confidence", "type", "context"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    if args.metadata is not None:
        fields["metadata"] = json_object(args.metadata, "--metadata")
    if args.timestamp is not None:
        fields["timestamp"] = time_option(args.timestamp, "--timestamp", out)
    if args.new_id is not None:
        if args.content is not None:
            raise ValidationError("give NEW_CONTENT or --id NEW, not both")
        if fields:
            raise ValidationError("--tags, --importance, --confidence, --type, --metadata, --context and "
                                  "--timestamp describe a new memory; with --id NEW, change NEW with "
                                  "'localmem update'")
        new: str | None = None  # resolved once the store is open
    elif args.content is None:
        raise ValidationError("give the replacing memory: NEW_CONTENT, or --id NEW for an existing one")
    else:
        new = text_argument(args.content, args)
        # A field makes supersede() store the text even when it looks like a memory id.
        fields.setdefault("tags", [])
    with open_store(args, must_exist=True) as store:
        if new is None:
            new = resolve_id(store, args.new_id, "--id")
        result = store.supersede(resolve_id(store, args.old, "OLD"), new, relation=args.relation,
                                 reason=args.reason, **fields)
        texts = _starts(store, result["superseded_memory_id"], result["memory_id"])
    _warn(out, result)
    if out.as_json:
        out.json({"status": "success", **result})
        return EXIT_OK
    out.line(result["memory_id"])
    out.note(supersession_meaning(result["relation_type"], result["superseded_memory_id"],
                                  result["memory_id"], *texts) or "")
    return EXIT_OK


def state_text(record: dict[str, Any]) -> str:
    """``get``'s state line: current, superseded by X, expired since T, ..."""
    state = record["state"]
    status = state["status"]
    parts = {
        "current": "current",
        "superseded": "superseded",
        "expired": f"expired since {human_time(record.get('t_invalid'))}",
        "archived": "archived",
        "not_yet_valid": f"not yet valid (from {human_time(record.get('t_valid'))})",
    }
    text = parts.get(status, status)
    if state.get("superseded_by"):
        joiner = " by " if status == "superseded" else "; superseded by "
        text += f"{joiner}{state['superseded_by']} ({state.get('relation_type')})"
        if status == "superseded" and record.get("t_invalid"):
            text += f" since {human_time(record['t_invalid'])}"
    if not state["current"]:
        text += " - recall hides it (--state-mode history shows it)"
    return text


def edge_lines(record: dict[str, Any], width: int = 80) -> list[str]:
    """``get``'s edge list: outgoing (this -> other) and incoming (other -> this), each edge's
    summary on the lines under it when the line would pass ``width`` cells."""
    lines: list[str] = []
    for key, arrow in (("outgoing", "-[{}]->"), ("incoming", "<-[{}]-")):
        edges = record["edges"][key]
        lines.append(f"{key} edges: {len(edges) or 'none'}")
        for edge in edges[:GET_EDGE_LINES]:
            head = f"  {arrow.format(edge['type'])} {edge['memory_id']} (strength {edge['strength']:.2f})"
            summary = short(edge["summary"], 60)
            if len(head) + 2 + len(summary) <= width:
                lines.append(f"{head}  {summary}")
            else:
                lines.append(head)
                lines.extend("    " + part for part in wrapped(summary, max(20, width - 4)))
        if len(edges) > GET_EDGE_LINES:
            lines.append(f"  ... and {len(edges) - GET_EDGE_LINES} more (--json lists them all)")
    return lines

