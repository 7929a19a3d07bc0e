"""``localmem demo``: a developer's assistant memory, then a few recalls.

Stores about fifteen memories (decisions, preferences, bugs, a superseded
decision, a few edges) with timestamps spread over the last four months,
then shows hybrid search, a tag-scoped query, a time window, supersession
and relation expansion.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .text import plural
from .timeparse import human_time

if TYPE_CHECKING:
    from .store import MemoryStore


@dataclass(frozen=True)
class DemoMemory:
    key: str
    days_ago: float
    type: str
    importance: float
    tags: tuple[str, ...]
    content: str


MEMORIES: tuple[DemoMemory, ...] = (
    DemoMemory("postgres", 121, "Decision", 0.9, ("project:alpha", "database", "decision"),
               "Chose PostgreSQL 16 over MySQL for project alpha's primary database: we need "
               "JSONB columns and row-level security for the multi-tenant tables."),
    DemoMemory("pytest", 112, "Preference", 0.7, ("preference", "lang:python", "testing"),
               "Prefers pytest with plain assert statements over unittest classes; shared "
               "fixtures live in conftest.py."),
    DemoMemory("celery", 96, "Decision", 0.8, ("project:alpha", "infra:queue", "decision"),
               "Alpha's background jobs run on Celery with RabbitMQ as the message broker."),
    DemoMemory("invoice_bug", 83, "Insight", 0.8, ("project:alpha", "bug", "database"),
               "Bug in alpha: the nightly invoice export timed out because the orders query did a "
               "sequential scan. Fixed by adding an index on orders(created_at)."),
    DemoMemory("ruff", 71, "Style", 0.6, ("preference", "lang:python", "tooling"),
               "Code style: format Python with ruff format at line length 100 and let ruff sort "
               "the imports."),
    DemoMemory("beta", 64, "Context", 0.6, ("project:beta", "frontend"),
               "Project beta is the internal analytics dashboard (TypeScript, React, Vite); it "
               "reads from alpha's PostgreSQL read replica."),
    DemoMemory("deploy", 47, "Decision", 0.8, ("project:alpha", "deploy", "ci"),
               "Alpha deploys to Fly.io from GitHub Actions; production deploys need a manual "
               "approval step."),
    DemoMemory("safari_bug", 39, "Insight", 0.6, ("project:beta", "bug", "frontend"),
               "Bug in beta: charts rendered blank in Safari because Intl.Segmenter is missing "
               "there; fixed with a polyfill."),
    DemoMemory("flaky", 26, "Pattern", 0.7, ("project:alpha", "testing"),
               "Flaky tests in alpha all came from tests sharing one database; each test now runs "
               "in its own transaction that is rolled back at the end."),
    DemoMemory("commits", 19, "Preference", 0.5, ("preference", "git"),
               "Wants commit messages in the imperative mood with a summary line under 72 "
               "characters."),
    DemoMemory("redis_bug", 9, "Insight", 0.7, ("project:alpha", "bug", "infra:queue"),
               "Bug in alpha: the Redis stream consumer lost pending jobs after a worker crash; "
               "fixed by claiming idle messages with XAUTOCLAIM when a worker starts."),
    DemoMemory("api_versioning", 5, "Decision", 0.7, ("project:alpha", "api", "decision"),
               "Decided to version alpha's HTTP API in the URL path (/v2/...) rather than in an "
               "Accept header, so curl examples stay simple."),
    DemoMemory("latency", 3, "Context", 0.6, ("project:alpha", "performance"),
               "Sprint review: alpha's p95 API latency dropped from 480 ms to 190 ms after the "
               "queue move and the orders index."),
    DemoMemory("small_prs", 1, "Preference", 0.6, ("preference", "code-review"),
               "Prefers small pull requests (under 400 changed lines) with a short checklist in "
               "the description."),
)

# The superseding decision (stored with store.supersede, replacing "celery").
REDIS = DemoMemory("redis", 14, "Decision", 0.85, ("project:alpha", "infra:queue", "decision"),
                   "Moved alpha's background jobs from Celery and RabbitMQ to Redis Streams with a "
                   "small custom worker: one less service to run, and Redis was already deployed.")
SUPERSEDE_REASON = "RabbitMQ was the only service we ran just for the job queue"

EDGES: tuple[tuple[str, str, str, float], ...] = (
    ("invoice_bug", "latency", "LEADS_TO", 0.8),
    ("redis", "latency", "LEADS_TO", 0.7),
    ("redis_bug", "redis", "RELATES_TO", 0.8),
    ("flaky", "pytest", "EXEMPLIFIES", 0.6),
    ("beta", "postgres", "RELATES_TO", 0.5),
)


@dataclass
class DemoRecall:
    title: str
    explanation: str
    params: dict[str, Any]


RECALLS: tuple[DemoRecall, ...] = (
    DemoRecall("Hybrid search",
               "vector similarity + full-text keywords + tags + importance + recency, one ranking",
               {"query": "why did we pick postgres for the database?", "limit": 4}),
    DemoRecall("Tag-scoped query",
               "tags=project:alpha matches project:alpha and anything below it (prefix match)",
               {"query": "bug fixes", "tags": ["project:alpha"], "limit": 4}),
    DemoRecall("Time window",
               "time_query='last 30 days'; with no query, the newest first",
               {"time_query": "last 30 days", "limit": 5}),
    DemoRecall("Superseded memory",
               "the Celery decision was superseded; current-state recall shows its replacement",
               {"query": "which message broker do alpha's background jobs use, Celery or RabbitMQ?",
                "limit": 3}),
    DemoRecall("Same query, state_mode=history",
               "history mode keeps superseded memories (marked) for audits",
               {"query": "which message broker do alpha's background jobs use, Celery or RabbitMQ?",
                "limit": 3, "state_mode": "history"}),
    DemoRecall("Relation expansion",
               "expand_relations=True follows edges from the hits (LEADS_TO, RELATES_TO, ...)",
               {"query": "invoice export timeout", "limit": 2, "expand_relations": True}),
)


def populate(store: MemoryStore, now: datetime) -> dict[str, str]:
    """Store the demo memories and edges; returns their ids by key."""
    def when(days: float) -> datetime:
        return now - timedelta(days=days, hours=(days * 7) % 9)

    ids = dict(zip(
        (m.key for m in MEMORIES),
        store.store_many([
            {"content": m.content, "type": m.type, "importance": m.importance, "tags": list(m.tags),
             "timestamp": when(m.days_ago), "metadata": {"source": "localmem demo"}}
            for m in MEMORIES
        ]),
    ))
    result = store.supersede(
        ids["celery"], REDIS.content, reason=SUPERSEDE_REASON, type=REDIS.type,
        importance=REDIS.importance, tags=list(REDIS.tags), timestamp=when(REDIS.days_ago),
        metadata={"source": "localmem demo"})
    ids["redis"] = result["memory_id"]
    for first, second, relation, strength in EDGES:
        store.associate(ids[first], ids[second], relation, strength)
    return ids


def _age(timestamp: str | None, now: datetime) -> str:
    if not timestamp:
        return "?"
    try:
        then = datetime.fromisoformat(timestamp)
    except ValueError:
        return "?"
    days = (now - then).total_seconds() / 86400
    return "today" if days < 1 else f"{int(days)}d ago"


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


def _relation_text(relation: dict[str, Any], texts: dict[str, str], width: int) -> str:
    """``-[TYPE]-> "other"`` for an edge of a result (outgoing, or the one it was reached by)."""
    kind = relation.get("type") or relation.get("relation_type") or "?"
    strength = relation.get("strength") or 0.0
    other = relation.get("memory")
    if isinstance(other, dict):  # an outgoing edge summary
        text = other.get("summary") or other.get("content") or texts.get(other.get("id", ""), "")
        return f"-[{kind} {strength:.2f}]-> {_short(text, width)}"
    seed = relation.get("from", "")
    text = _short(texts.get(seed, seed), width)
    if relation.get("direction") == "in":  # this memory -[kind]-> the seed
        return f"-[{kind} {strength:.2f}]-> {text}"
    return f"<-[{kind} {strength:.2f}]- {text}"


def format_recall(response: dict[str, Any], now: datetime, texts: dict[str, str],
                  width: int = 80) -> list[str]:
    """Readable lines for one recall response (``texts``: content by memory id), none wider
    than ``width`` cells: a result's rank, score, match and age, then its content, tags and
    edges wrapped under it."""
    lines: list[str] = []
    indent = " " * 5
    room = max(30, width - len(indent))

    def under(text: str) -> None:
        lines.extend(textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent,
                                   break_on_hyphens=False) or [indent])

    for rank, result in enumerate(response.get("results", []), 1):
        memory = result.get("memory", {})
        marks = []
        if memory.get("t_invalid"):
            marks.append("superseded" if memory.get("metadata", {}).get("superseded_by") else "invalid")
        if result.get("state_replaces"):
            replaced = texts.get(result["state_replaces"], result["state_replaces"])
            marks.append("replaces: " + _short(replaced, 40))
        mark = f" [{', '.join(marks)}]" if marks else ""
        head = f"{result.get('final_score', 0.0):.3f}  {result.get('match_type', '')}  {_age(memory.get('timestamp'), now)}"
        lines.append(f"  {rank}. " + _short(head + mark, width - 5))
        under(" ".join(str(memory.get("content", "")).split()))
        under(f"tags: {', '.join(memory.get('tags', []))}")
        for relation in result.get("relations") or []:
            under(_relation_text(relation, texts, room - 26))
    if not response.get("results"):
        lines.append("  (no results)")
    notes = []
    state = response.get("state_filter")
    if state and (state.get("suppressed_count") or state.get("replacement_count")):
        notes.append(f"state filter: {state.get('suppressed_count', 0)} hidden, "
                     f"{state.get('replacement_count', 0)} replaced by their current version")
    window = response.get("time_window")
    if window:
        notes.append(f"window: {human_time(window.get('start')) if window.get('start') else '...'} to "
                     f"{human_time(window.get('end')) if window.get('end') else '...'}")
    expansion = response.get("expansion")
    if expansion:
        expanded, seeds = expansion.get("expanded_count", 0), expansion.get("seed_count", 0)
        notes.append(f"expansion: {plural(expanded, 'related memory', 'related memories')} from "
                     f"{plural(seeds, 'seed')}")
    gate = response.get("score_filter") or {}
    if gate.get("filtered_count"):
        notes.append(f"score floor: {plural(gate['filtered_count'], 'weaker result')} after a clear gap "
                     "in the scores left out (adaptive_floor=False keeps them)")
    for note in notes:
        lines.extend(textwrap.wrap(f"({note})", width=width, initial_indent="  ", subsequent_indent="   "))
    return lines


def run_demo(store: MemoryStore, *, out: Callable[[str], None], as_json: bool = False,
             width: int = 80) -> dict[str, Any]:
    """Populate ``store`` and run the demo recalls; prints (lines of at most ``width`` cells)
    unless ``as_json``; returns everything."""
    def say(text: str, indent: str = "") -> None:
        for line in textwrap.wrap(text, width=width, subsequent_indent=indent, break_on_hyphens=False):
            out(line)

    now = store.now()
    ids = populate(store, now)
    texts = {memory_id: store.get(memory_id)["content"] for memory_id in ids.values()}
    embedder = store.embedder.name if store.embedder is not None else "none"
    if not as_json:
        say(f"Stored {len(ids)} memories and {len(EDGES) + 1} relations "
            f"(one decision superseded) with embedder {embedder!r}.")
    runs: list[dict[str, Any]] = []
    degraded_noted = False
    for demo in RECALLS:
        response = store.recall(**demo.params)
        runs.append({"title": demo.title, "params": demo.params, "response": response})
        if as_json:
            continue
        shown = ", ".join(f"{k}={v!r}" for k, v in demo.params.items())
        out("")
        say(f"== {demo.title}: {demo.explanation}", "   ")
        say(f"   recall({shown})", "     ")
        if response.get("degraded") and not degraded_noted:
            reason = _short(store.embedder_error or response.get("degraded_reason") or "", 160)
            say(f"   note: degraded - vector search is off ({reason}); keyword, tag and graph "
                "channels still answer", "     ")
            degraded_noted = True
        for line in format_recall(response, now, texts, width):
            out(line)
    return {"memories": len(ids), "ids": ids, "recalls": runs,
            "degraded": any(r["response"].get("degraded") for r in runs)}
