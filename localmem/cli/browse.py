"""Browsing commands: list (recent memories, filtered and paged) and by-tag."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..storage.listing import MAX_LIMIT, SORTS, STATE_FILTERS
from ..text import plural
from .common import EXIT_OK, AddCommand, open_store, split_list
from .output import Column, Output, display_tags, one_line
from .shown import hidden_states_text, short_date, state_marker

if TYPE_CHECKING:
    from ..store import MemoryStore


def register(command: AddCommand) -> None:
    """list, by-tag."""
    p = command("list", cmd_list, "list memories, newest first, with filters and paging",
                epilog="Times (--since, --until) are ISO 8601 ('2025-06-01', '2025-06-01T09:00Z') or "
                       "any time expression recall takes (today, yesterday, last week, last 30 days, "
                       "3 days ago, since monday, ...). An expression stands for its span: --since "
                       "takes its start, --until its end; a bare date for --until includes that day.")
    p.add_argument("--tags", action="append", metavar="A,B",
                   help="only memories with any of these tags; 'project' also matches project:alpha "
                        "(comma-separated or repeated)")
    p.add_argument("--tag-mode", choices=("any", "all"), default="any", help="any (default) or all of --tags")
    p.add_argument("--tag-match", choices=("prefix", "exact"), default="prefix",
                   help="prefix (default) or exact tag matching")
    p.add_argument("--type", action="append", metavar="T",
                   help="only memories of these types (Decision, Preference, ...; comma-separated or repeated)")
    p.add_argument("--context", metavar="NAME", help="only memories in this context (namespace)")
    p.add_argument("--since", metavar="TIME", help="created at or after TIME")
    p.add_argument("--until", metavar="TIME", help="created before TIME")
    p.add_argument("--sort", choices=SORTS, default="time_desc",
                   help="time_desc (default: newest first), time_asc, updated_desc, updated_asc, "
                        "importance, accessed (last recalled first)")
    p.add_argument("--state", choices=tuple(STATE_FILTERS), default="current",
                   help="current (default: what recall shows; the footer counts the rest), all (each "
                        "memory not current marked, e.g. [superseded by 3f2a9c1d]), not_current, or "
                        "one state: superseded, expired, archived, not_yet_valid")
    p.add_argument("--limit", type=int, default=20, metavar="N", help=f"page size (default 20, at most {MAX_LIMIT})")
    p.add_argument("--offset", type=int, default=0, metavar="N", help="skip this many (the next page)")

    p = command("by-tag", cmd_by_tag, "list memories having any of the tags (case-insensitive)")
    p.add_argument("tags", nargs="+", metavar="TAG", help="tags to look for (any of them)")
    p.add_argument("--prefix", action="store_true",
                   help="match tag prefixes as recall does: 'project' finds project:alpha too "
                        "(default: whole tags only)")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="page size (default 20, max 200)")
    p.add_argument("--offset", type=int, default=0, metavar="N", help="skip this many (the next page)")


def memory_rows(store: MemoryStore, memories: list[dict[str, Any]]) -> tuple[list[Column], list[list[Any]]]:
    """Columns and rows for a list of memory records: short id first, the content gets the room,
    after a marker for a memory that is not current (``[superseded by 3f2a9c1d]``)."""
    states = {m["id"]: m["state"] for m in memories if "state" in m}
    if len(states) < len(memories):
        states = store.states(memories)
    heads = [s["superseded_by"] for s in states.values() if s.get("superseded_by")]
    short = store.short_ids([m["id"] for m in memories] + heads)
    columns = [
        Column("id", style="id"),
        Column("date"),
        Column("type", drop=3),
        Column("imp.", right=True, drop=4),
        Column("content", flex=True),
        Column("tags", cap=40, least=10, drop=1, style="tags"),
    ]
    rows = [[short[m["id"]], short_date(m["timestamp"]), m["type"], f"{m['importance']:.2f}",
             state_marker(m, states.get(m["id"]), short) + one_line(m["content"]), display_tags(m["tags"])]
            for m in memories]
    return columns, rows


def _page_line(page: dict[str, Any], total: int | None = None, hidden: str = "") -> str:
    first = page["offset"] + 1 if page["count"] else page["offset"]
    last = page["offset"] + page["count"]
    of = f" of {total}" if total is not None else ""
    more = f"; next page: --offset {page['next_offset']}" if page.get("has_more") else ""
    hidden = f"; {hidden}" if hidden else ""
    return f"(showing {first}-{last}{of}{more}{hidden})"


def cmd_list(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        page = store.list_memories(tags=split_list(args.tags), tag_mode=args.tag_mode,
                                   tag_match=args.tag_match, types=split_list(args.type),
                                   context=args.context, since=args.since, until=args.until,
                                   sort=args.sort, limit=args.limit, offset=args.offset,
                                   state=args.state)
        for warning in page.get("warnings", ()):
            out.note(f"warning: {warning}")
        if out.as_json:
            out.json(page)
            return EXIT_OK
        hidden = hidden_states_text(page["state_counts"], STATE_FILTERS[args.state])
        hidden_note = f"{hidden}; --state all shows them" if hidden else ""
        if not page["memories"]:
            if hidden:
                out.lines(out.wrap(f"no memories match --state {args.state} ({hidden_note})"))
            elif page["total"]:
                out.lines(out.wrap(f"no memories past --offset {page['offset']} "
                                   f"({plural(page['total'], 'memory', 'memories')} in all)"))
            elif page["filters"]:
                out.line("no memories match these filters")
            else:
                out.lines(out.wrap("no memories yet: 'localmem store TEXT' stores one, "
                                   "'localmem import FILE' many"))
            return EXIT_OK
        columns, rows = memory_rows(store, page["memories"])
    out.lines(out.table(columns, rows))
    out.line("")
    out.lines(out.wrap(_page_line(page, page["total"], hidden_note), "dim"))
    return EXIT_OK


def cmd_by_tag(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        page = store.by_tag(args.tags, limit=args.limit, offset=args.offset, prefix=args.prefix)
        for warning in page.get("warnings", ()):
            out.note(f"warning: {warning}")
        if out.as_json:
            out.json(page)
            return EXIT_OK
        if not page["memories"]:
            out.line(("no memories with a tag under " if args.prefix else "no memories tagged ")
                     + " or ".join(page["tags"]))
            if not args.prefix and store.by_tag(args.tags, limit=1, prefix=True)["count"]:
                out.lines(out.wrap(f"(tags under them exist: 'localmem by-tag --prefix "
                                   f"{' '.join(page['tags'])}' lists those)"))
            return EXIT_OK
        columns, rows = memory_rows(store, page["memories"])
    out.lines(out.table(columns, rows))
    out.line("")
    out.lines(out.wrap(_page_line(page), "dim"))
    return EXIT_OK
