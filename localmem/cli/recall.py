"""The recall command: ranked memories for a query, as a table or JSON."""

from __future__ import annotations

import argparse
from typing import Any

from .common import EXIT_OK, SEEN_BY_OTHERS, AddCommand, add_verbose, key_values, open_store, split_list, text_argument
from ..errors import ValidationError
from ..recall.params import ALIASES
from ..recall.relevance import evidence_text
from ..text import plural
from .output import Column, Output, display_tags, one_line
from .shown import human_time, short_date, state_marker

SORT_CHOICES = ("score", "time_desc", "time_asc", "updated_desc", "updated_asc")


def register(command: AddCommand) -> None:
    """recall."""
    p = command("recall", cmd_recall, "hybrid recall: rank memories for a query")
    p.add_argument("query", nargs="?",
                   help=f"what to look for (omit for the most important memories; {SEEN_BY_OTHERS})")
    p.add_argument("--limit", type=int, metavar="N", help="how many results (default 5)")
    p.add_argument("--tags", action="append", metavar="A,B", help="only memories with these tags")
    p.add_argument("--tag-mode", choices=("any", "all"), help="any (default) or all of --tags")
    p.add_argument("--tag-match", choices=("prefix", "exact"),
                   help="prefix (default; project matches project:alpha) or exact")
    p.add_argument("--exclude-tags", action="append", metavar="A,B", help="leave out memories with these tags")
    p.add_argument("--time-query", metavar="EXPR",
                   help="'today', 'last 2 weeks', 'since monday', 'march 2025', '2026-11-27', ...")
    p.add_argument("--strict-time", action="store_true", default=None,
                   help="refuse (exit 2) a --time-query that is not understood, instead of a warning")
    p.add_argument("--start", metavar="TS", help="window start, ISO 8601")
    p.add_argument("--end", metavar="TS", help="window end, ISO 8601")
    p.add_argument("--sort", choices=SORT_CHOICES, help="score (default) or a time order")
    p.add_argument("--context", metavar="NAME",
                   help="a hint for ranking, e.g. 'coding style' or 'python' (memories tagged with it rank "
                        "higher); not a filter: recall searches every context")
    p.add_argument("--expand-relations", action="store_true", default=None,
                   help="follow edges from the results to related memories")
    p.add_argument("--state-mode", choices=("current", "history"),
                   help="current (default: hide superseded/expired memories) or history")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="any other recall parameter (repeatable), e.g. --param min_score=0.3")
    add_verbose(p)


def recall_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if args.query is not None:
        params["query"] = text_argument(args.query, args, one_line=True)
    simple = ("limit", "tag_mode", "tag_match", "time_query", "start", "end", "sort", "context",
              "expand_relations", "state_mode", "strict_time")
    for name in simple:
        value = getattr(args, name)
        if value is not None:
            params[name] = value
    tags = split_list(args.tags)
    if tags is not None:
        params["tags"] = tags
    excluded = split_list(args.exclude_tags)
    if excluded is not None:
        params["exclude_tags"] = excluded
    extra = key_values(args.param, "--param")
    for key in extra:  # a --param beside the option (or the query) for the same parameter would win silently
        name = ALIASES.get(key, key)
        given = next((k for k in params if ALIASES.get(k, k) == name), None)
        if given is not None:
            shown = "the query argument" if given == "query" else f"--{given.replace('_', '-')}"
            raise ValidationError(f"--param {key}=... and {shown} give one parameter twice; give it once")
    params.update(extra)
    return params


# What each confidence level tells a person, and its colour.
CONFIDENCE_TEXT = {
    "none": ("nothing stored looks relevant to the query", "bad"),
    "low": ("probably nothing relevant; treat these results with suspicion", "warn"),
    "moderate": ("relevant memories are likely among these", None),
    "high": ("a close match is stored", "good"),
}


def confidence_line(confidence: dict[str, Any] | None) -> tuple[str, str | None] | None:
    """``match confidence: low (relevance 0.12; best cosine 0.21): ...`` and its colour role, or None."""
    if not confidence or confidence.get("level") not in CONFIDENCE_TEXT:
        return None
    level = confidence["level"]
    text, role = CONFIDENCE_TEXT[level]
    return f"match confidence: {level}{evidence_text(confidence)}: {text}", role


CONTENT_LINES = 8  # a result's content wraps over up to this many lines, then ends in "..."


def recall_lines(response: dict[str, Any], out: Output | None = None,
                 short_ids: dict[str, str] | None = None,
                 states: dict[str, dict[str, Any]] | None = None) -> list[str]:
    """The results as a table that fits the terminal (each content wrapped over up to
    CONTENT_LINES lines, the memory's date beside it), then a summary and the match confidence.
    ``states`` (history mode): each memory's state, a memory not current marked in its content."""
    out = out or Output(False, color="never")
    short_ids = short_ids or {}
    states = states or {}
    results = response.get("results", [])
    columns = [
        Column("#", right=True),
        Column("score", right=True),
        Column("id", style="id"),
        Column("date", drop=1),  # given up last
        Column("content", flex=True, wrap=CONTENT_LINES),
        Column("tags", cap=40, least=10, drop=2, style="tags"),
        Column("match", drop=3, style="dim"),
    ]
    rows = []
    for rank, result in enumerate(results, 1):
        memory = result.get("memory") or {}
        memory_id = str(result.get("id", ""))
        content = state_marker(memory, states.get(memory_id), short_ids) + one_line(memory.get("content", ""))
        rows.append([str(rank), f"{result.get('final_score', 0.0):.3f}", short_ids.get(memory_id, memory_id),
                     short_date(memory.get("timestamp")), content, display_tags(memory.get("tags") or []),
                     str(result.get("match_type", ""))])
    lines = out.table(columns, rows) if rows else ["no memories found"]
    vector = response.get("vector_search") or {}
    summary = [plural(response.get("count", len(rows)), "result"),
               f"vector search {'on' if vector.get('enabled') else 'off'}"]
    if response.get("sort") not in (None, "score"):
        summary.append(f"sorted {response['sort']}")
    if response.get("query_time_ms") is not None:
        summary.append(f"{response['query_time_ms']:.0f} ms")
    window = response.get("time_window")
    if window and (window.get("start") or window.get("end")):
        summary.append(f"window {human_time(window.get('start')) if window.get('start') else '...'} to "
                       f"{human_time(window.get('end')) if window.get('end') else '...'}")
    for date in (response.get("learned_rank") or {}).get("dates_in_query") or []:
        if date.get("ignored"):
            summary.append(f"date in the query not used: {date.get('expression')} ({date['ignored']})")
        else:
            summary.append(f"date in the query ranked by: {date.get('expression')} (a hint, not a filter)")
    spread = ((response.get("learned_rank") or {}).get("thread_spread") or {}).get("moved")
    if spread:
        summary.append(f"{spread} moved down so the first results span more conversations (a gathering question)")
    state = response.get("state_filter") or {}
    if state.get("suppressed_count"):
        summary.append(f"{state['suppressed_count']} not current hidden (--state-mode history shows them)")
    expansion = response.get("expansion")
    if expansion:
        summary.append(f"{expansion.get('expanded_count', 0)} related by expansion")
    gate = response.get("score_filter") or {}
    if gate.get("filtered_count"):
        hint = (" (--param adaptive_floor=false keeps them)"
                if gate.get("adaptive_floor") is not None and not gate.get("min_score") else "")
        summary.append(f"{plural(gate['filtered_count'], 'weaker result')} below the score floor left out{hint}")
    if gate.get("candidates_below_min_score"):
        summary.append(f"{plural(gate['candidates_below_min_score'], 'candidate')} below min_score "
                       f"{gate.get('min_score')} left out")
    lines.append("")
    lines.extend(out.wrap("(" + "; ".join(summary) + ")", "dim"))
    confidence = confidence_line(response.get("confidence")) if rows else None
    if confidence is not None:
        lines.extend(out.wrap(*confidence))
    if response.get("degraded"):
        lines.extend(out.wrap(f"note: degraded ({response.get('degraded_reason')}): answered without the "
                              "vector channel, from keyword, tag and graph matches"))
    return lines


def query_after_tags(args: argparse.Namespace) -> str | None:
    """The warning for ``recall --tags health important``: one word right after a tag option's value
    reads as the query, though it was likely meant as a second tag."""
    query, typed = args.query, getattr(args, "raw_argv", [])
    if not query or query == "-" or any(ch.isspace() for ch in query) or query not in typed:
        return None
    at = typed.index(query)
    before = typed[at - 2] if at >= 2 else ""
    joined = typed[at - 1] if at >= 1 else ""
    option = next((o for o in ("--tags", "--exclude-tags") if before == o or joined.startswith(o + "=")), None)
    if option is None:
        return None
    value = joined.split("=", 1)[1] if joined.startswith(option + "=") else joined
    return (f"{query!r} is read as the query, not as a tag: {option} takes one value; for two tags write "
            f"{option} {value},{query} (or put the query before the options to silence this)")


def cmd_recall(args: argparse.Namespace, out: Output) -> int:
    ambiguous = query_after_tags(args)
    if ambiguous:
        out.note(f"warning: {ambiguous}")
    params = recall_params(args)
    with open_store(args, must_exist=True) as store:
        response = store.recall(**params)
        for warning in response.get("warnings") or []:
            out.note(f"warning: {warning}")
        if out.as_json:
            out.json(response)
            return EXIT_OK
        results = response.get("results", [])
        states = (store.states([r["memory"] for r in results if r.get("memory")])
                  if params.get("state_mode") == "history" else {})
        heads = [s["superseded_by"] for s in states.values() if s.get("superseded_by")]
        short_ids = store.short_ids([r["id"] for r in results] + heads)
        out.lines(recall_lines(response, out, short_ids, states))
        if response.get("degraded") and store.embedder_error:
            out.note(f"warning: {store.embedder_error}")
    return EXIT_OK
