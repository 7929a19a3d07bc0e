"""The ``localmem`` command line: store, recall, maintain and move memories.

``localmem [--db PATH] [--embedder NAME] [--json] COMMAND ...``; the global
options are also accepted after the command. Exit codes: 0 success, 2 bad
usage or invalid input (``ValidationError``), 1 anything else (not found,
configuration, database errors, doctor problems), with ``error: ...`` on
stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import apsw

from . import __version__
from .storage.database import MEMORY_PATH
from .errors import LocalMemError, NotFoundError, ValidationError

if TYPE_CHECKING:
    from .store import MemoryStore

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

SORT_CHOICES = ("score", "time_desc", "time_asc", "updated_desc", "updated_asc")
DEFAULT_TERMINAL_WIDTH = 160

# -- paths and embedder ----------------------------------------------------


def default_db_path(environ: os._Environ[str] | dict[str, str] | None = None) -> str:
    """``$LOCALMEM_DB``, else ``$XDG_DATA_HOME/localmem/memory.db``, else ``~/.local/share/...``."""
    env = os.environ if environ is None else environ
    explicit = (env.get("LOCALMEM_DB") or "").strip()
    if explicit:
        return explicit
    base = (env.get("XDG_DATA_HOME") or "").strip()
    if not base or not os.path.isabs(base):  # the XDG spec says to ignore relative paths
        base = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(base, "localmem", "memory.db")


def recorded_embedder(path: str) -> str | None:
    """The embedder name a database file recorded when it was created, if any (read-only peek)."""
    if path == MEMORY_PATH:
        return None
    file_path = Path(path).expanduser()
    try:
        if not file_path.is_file() or file_path.stat().st_size == 0:
            return None
    except OSError:
        return None
    try:
        conn = apsw.Connection(str(file_path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        return row[0] if row and row[0] else None
    except apsw.Error:
        return None
    finally:
        conn.close()


def embedder_spec_for(name: str) -> str:
    """The ``embedder=`` argument that recreates a recorded embedder name."""
    match = re.fullmatch(r"hash-([0-9]+)", name)
    if match:
        return f"hash:{match.group(1)}"
    return name


def choose_embedder(explicit: str | None, path: str) -> str:
    """``--embedder``, else ``$LOCALMEM_EMBEDDER``, else what the file recorded, else ``auto``.

    Reusing the recorded embedder keeps a database made with ``hash`` (or a
    particular model) in one vector space without repeating ``--embedder``.
    """
    if explicit and explicit.strip():
        return explicit.strip()
    env = (os.environ.get("LOCALMEM_EMBEDDER") or "").strip()
    if env:
        return env
    recorded = recorded_embedder(path)
    if recorded:
        return embedder_spec_for(recorded)
    return "auto"


# -- output helpers --------------------------------------------------------


def terminal_width() -> int:
    """The terminal's width; ``$COLUMNS`` or a generous default when output is piped."""
    return max(60, shutil.get_terminal_size((DEFAULT_TERMINAL_WIDTH, 24)).columns)


def short(text: Any, width: int) -> str:
    """One line of at most ``width`` characters (whitespace collapsed, ``...`` when cut)."""
    value = " ".join(str(text if text is not None else "").split())
    if len(value) <= width:
        return value
    if width <= 3:
        return value[:width]
    return value[: width - 3].rstrip() + "..."


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, flex: int,
          caps: dict[int, int] | None = None, right: Iterable[int] = (),
          width: int | None = None) -> list[str]:
    """Aligned columns; column ``flex`` shrinks to fit the terminal, ``caps`` cap others."""
    caps = dict(caps or {})
    right = set(right)
    count = len(headers)
    widths = [max([len(headers[i])] + [len(r[i]) for r in rows]) for i in range(count)]
    for index, cap in caps.items():
        widths[index] = min(widths[index], max(cap, len(headers[index])))
    total = width or terminal_width()
    fixed = sum(w for i, w in enumerate(widths) if i != flex) + 2 * (count - 1)
    widths[flex] = max(len(headers[flex]), min(widths[flex], max(20, total - fixed)))
    lines = []
    for row in [list(headers)] + [list(r) for r in rows]:
        cells = []
        for i, cell in enumerate(row):
            cell = short(cell, widths[i]) if len(cell) > widths[i] else cell
            cells.append(cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]))
        lines.append("  ".join(cells).rstrip())
    return lines


def human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # unreachable


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, allow_nan=False)


class Output:
    """Where a command writes: stdout for results, stderr for notes and errors."""

    def __init__(self, as_json: bool, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.as_json = as_json
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr

    def line(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def lines(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.line(text)

    def json(self, value: Any) -> None:
        self.stdout.write(json_text(value) + "\n")

    def note(self, text: str) -> None:
        self.stderr.write(text + "\n")


# -- argument parsing ------------------------------------------------------


def _global_options() -> argparse.ArgumentParser:
    """--db/--embedder/--json, accepted before or after the command (SUPPRESS keeps either)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("global options")
    group.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS,
                       help="database file (default: $LOCALMEM_DB, else "
                            "$XDG_DATA_HOME/localmem/memory.db or ~/.local/share/localmem/memory.db)")
    group.add_argument("--embedder", metavar="NAME", default=argparse.SUPPRESS,
                       help="auto, hash, hash:N, none, or a sentence-transformers model name or path "
                            "(run through ONNX when exported, see 'embedder export'; onnx:MODEL or "
                            "st:MODEL forces one) (default: $LOCALMEM_EMBEDDER, else the embedder the "
                            "database was made with, else auto)")
    group.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                       help="machine-readable JSON output")
    return parent


def _split_list(values: Sequence[str] | None) -> list[str] | None:
    """Repeated and comma-separated values as one list (None when the option was not given)."""
    if values is None:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _json_object(text: str | None, option: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"{option} must be valid JSON: {exc}") from None


def _key_values(pairs: Sequence[str] | None, option: str) -> dict[str, Any]:
    """``key=value`` pairs; a key given twice collects a list."""
    values: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ValidationError(f"{option} expects key=value, got {pair!r}")
        if key in values:
            previous = values[key]
            values[key] = (previous if isinstance(previous, list) else [previous]) + [value]
        else:
            values[key] = value
    return values


def build_parser() -> argparse.ArgumentParser:
    common = _global_options()
    parser = argparse.ArgumentParser(
        prog="localmem", parents=[common],
        description="A memory store for AI assistants in one SQLite file (AutoMem-compatible).",
        epilog="Exit codes: 0 success, 2 bad usage or invalid input, 1 other errors.")
    parser.add_argument("--version", action="version", version=f"localmem {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, func: Callable[[argparse.Namespace, Output], int], help_text: str,
                **kwargs: Any) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, parents=[common], help=help_text, description=help_text, **kwargs)
        sub.set_defaults(func=func)
        return sub

    p = command("store", cmd_store, "store a memory and print its id")
    p.add_argument("content", help="the memory text ('-' reads it from stdin)")
    p.add_argument("--tags", action="append", metavar="A,B", help="tags, comma-separated or repeated")
    p.add_argument("--importance", metavar="X", help="importance in [0, 1] (default 0.5)")
    p.add_argument("--confidence", metavar="X", help="type confidence in [0, 1]")
    p.add_argument("--type", metavar="T", help="memory type (Decision, Preference, ...; default: classified)")
    p.add_argument("--timestamp", metavar="TS", help="creation time, ISO 8601 (default: now)")
    p.add_argument("--t-valid", metavar="TS", help="valid from (default: the timestamp)")
    p.add_argument("--t-invalid", metavar="TS", help="valid until")
    p.add_argument("--metadata", metavar="JSON", help="a JSON object")
    p.add_argument("--context", metavar="NAME", help="context (namespace) name (default: default)")

    p = command("recall", cmd_recall, "hybrid recall: rank memories for a query")
    p.add_argument("query", nargs="?", help="what to look for (omit for the most important memories)")
    p.add_argument("--limit", type=int, metavar="N", help="how many results (default 5)")
    p.add_argument("--tags", action="append", metavar="A,B", help="only memories with these tags")
    p.add_argument("--tag-mode", choices=("any", "all"), help="any (default) or all of --tags")
    p.add_argument("--tag-match", choices=("prefix", "exact"),
                   help="prefix (default; project matches project:alpha) or exact")
    p.add_argument("--exclude-tags", action="append", metavar="A,B", help="leave out memories with these tags")
    p.add_argument("--time-query", metavar="EXPR", help="'today', 'last week', 'last 30 days', ...")
    p.add_argument("--start", metavar="TS", help="window start, ISO 8601")
    p.add_argument("--end", metavar="TS", help="window end, ISO 8601")
    p.add_argument("--sort", choices=SORT_CHOICES, help="score (default) or a time order")
    p.add_argument("--context", metavar="NAME", help="context (namespace) name")
    p.add_argument("--expand-relations", action="store_true", default=None,
                   help="follow edges from the results to related memories")
    p.add_argument("--state-mode", choices=("current", "history"),
                   help="current (default: hide superseded/expired memories) or history")
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="any other recall parameter (repeatable), e.g. --param min_score=0.3")

    p = command("get", cmd_get, "show one memory")
    p.add_argument("id", help="memory id")

    p = command("update", cmd_update, "change fields of a memory")
    p.add_argument("id", help="memory id")
    p.add_argument("--content", help="new text (re-embedded)")
    p.add_argument("--tags", action="append", metavar="A,B", help="replace the tags ('' clears them)")
    p.add_argument("--importance", metavar="X")
    p.add_argument("--confidence", metavar="X")
    p.add_argument("--type", metavar="T")
    p.add_argument("--timestamp", metavar="TS")
    p.add_argument("--t-valid", metavar="TS")
    p.add_argument("--t-invalid", metavar="TS")
    p.add_argument("--metadata", metavar="JSON", help="replace the metadata with this JSON object")

    p = command("delete", cmd_delete, "delete a memory with its edges")
    p.add_argument("id", help="memory id")

    p = command("associate", cmd_associate, "link two memories: ID1 -[TYPE]-> ID2")
    p.add_argument("id1")
    p.add_argument("id2")
    p.add_argument("--type", default="RELATES_TO", metavar="T",
                   help="relation type (default RELATES_TO; LEADS_TO, PREFERS_OVER, PART_OF, ...)")
    p.add_argument("--strength", default=None, metavar="S", help="strength in [0, 1] (default 0.5)")

    p = command("by-tag", cmd_by_tag, "list memories having any of the tags (exact, case-insensitive)")
    p.add_argument("tags", nargs="+", metavar="TAG")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="page size (default 20, max 200)")
    p.add_argument("--offset", type=int, default=0, metavar="N")

    p = command("import", cmd_import, "import memories and edges from JSONL (as written by export)",
                epilog="Vectors in the file are stored as they are: create the target database with the "
                       "same --embedder as the exporting one (or use --reembed).")
    p.add_argument("file", metavar="FILE", help="JSONL file, or '-' for stdin")
    p.add_argument("--progress", action="store_true", help="show a progress bar even when stderr is not a terminal")
    p.add_argument("--batch-size", type=int, default=1000, metavar="N",
                   help="memories per transaction (default 1000)")
    p.add_argument("--skip-existing", action="store_true", help="leave memories whose id exists untouched")
    p.add_argument("--embed-missing", action="store_true",
                   help="also embed memories exported without an embedding")
    p.add_argument("--reembed", action="store_true",
                   help="ignore the file's vectors and embed everything with this database's embedder")

    p = command("export", cmd_export, "export every memory (with its vector) and edge as JSONL")
    p.add_argument("file", nargs="?", default="-", metavar="FILE", help="output file, or '-' for stdout (default)")

    p = command("stats", cmd_stats, "counts, types and top tags")
    p.add_argument("--top", type=int, default=10, metavar="N", help="how many tags to list (default 10)")

    p = command("doctor", cmd_doctor, "check that memories, full-text, vectors, tags and edges agree")
    p.add_argument("--repair", action="store_true",
                   help="rebuild the derived indexes and embed memories that have no embedding")

    p = command("backup", cmd_backup,
                "copy the database to DEST with SQLite's online backup (consistent while other processes write)")
    p.add_argument("dest", metavar="DEST", help="the backup file to write (mode 0600)")
    p.add_argument("--force", action="store_true", help="overwrite DEST if it exists")

    p = command("restore", cmd_restore,
                "replace the database's contents with a backup made by 'localmem backup' "
                "(the current contents are saved beside it first)")
    p.add_argument("src", metavar="SRC", help="the backup file to restore")

    command("demo", cmd_demo, "store a sample memory set in a temporary database and run example recalls")

    p = command("serve", cmd_serve, "serve the AutoMem-compatible HTTP API (needs the 'server' extra)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8001, help="port (default 8001)")
    p.add_argument("--log-level", default="info", help="uvicorn log level (default info)")

    command("mcp", cmd_mcp, "serve the memory tools to an MCP client over stdio (needs the 'mcp' extra)")

    p = command("embedder", cmd_embedder,
                "export the embedding model to ONNX once (a torch-free, fast cold start), or show its status",
                epilog="The export needs torch, sentence-transformers and onnx; using it needs the 'onnx' "
                       "extra (onnxruntime, tokenizers). It is cached in $LOCALMEM_CACHE_DIR, else "
                       "$XDG_CACHE_HOME/localmem or ~/.cache/localmem.")
    p.add_argument("action", choices=("export", "status"), help="export, or status of the cached export")
    p.add_argument("model", nargs="?", metavar="MODEL",
                   help="model name or path (default: the database's embedder, else $LOCALMEM_MODEL "
                        "or all-MiniLM-L6-v2)")
    p.add_argument("--force", action="store_true", help="export again even when a current export is cached")
    return parser


# -- opening the store -----------------------------------------------------


def db_path(args: argparse.Namespace) -> str:
    return getattr(args, "db", None) or default_db_path()


def open_store(args: argparse.Namespace, *, must_exist: bool = False,
               path: str | None = None) -> MemoryStore:
    """Open the database named by ``--db`` (or ``path``) with the chosen embedder."""
    from .store import MemoryStore

    path = path or db_path(args)
    if must_exist and path != MEMORY_PATH and not Path(path).expanduser().exists():
        raise LocalMemError(f"no database at {path} (give --db PATH or set $LOCALMEM_DB; "
                            "'localmem store' or 'localmem import' creates one)")
    return MemoryStore(path, embedder=choose_embedder(getattr(args, "embedder", None), path))


# -- commands --------------------------------------------------------------


def _store_fields(args: argparse.Namespace) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    tags = _split_list(args.tags)
    if tags is not None:
        fields["tags"] = tags
    for name in ("importance", "confidence", "type", "timestamp", "t_valid", "t_invalid"):
        value = getattr(args, name, None)
        if value is not None:
            fields[name] = value
    if args.metadata is not None:
        fields["metadata"] = _json_object(args.metadata, "--metadata")
    return fields


def record_lines(record: dict[str, Any]) -> list[str]:
    """A memory record as ``field  value`` lines, then its content."""
    rows: list[tuple[str, str]] = [
        ("id", record["id"]),
        ("type", f"{record['type']} (confidence {record['confidence']:.2f})"),
        ("importance", f"{record['importance']:.2f}"),
        ("tags", ", ".join(record["tags"]) or "-"),
        ("context", record["context"]),
        ("timestamp", record["timestamp"]),
        ("updated_at", record["updated_at"]),
        ("last_accessed", record["last_accessed"]),
        ("t_valid", record["t_valid"] or "-"),
    ]
    if record.get("t_invalid"):
        rows.append(("t_invalid", record["t_invalid"]))
    if record.get("archived"):
        rows.append(("archived", "yes"))
    if record.get("relevance_score") is not None:
        rows.append(("relevance", f"{record['relevance_score']:.2f}"))
    if record.get("summary") and record["summary"] != record["content"]:
        rows.append(("summary", record["summary"]))
    if record.get("metadata"):
        rows.append(("metadata", json.dumps(record["metadata"], ensure_ascii=False)))
    width = max(len(name) for name, _ in rows)
    lines = [f"{name.ljust(width)}  {value}" for name, value in rows]
    lines.append("")
    lines.extend(record["content"].splitlines() or [""])
    return lines


@contextmanager
def _naming(memory_id: str) -> Iterator[None]:
    """Say which memory was not found."""
    try:
        yield
    except NotFoundError as exc:
        raise NotFoundError(f"{exc.message}: {memory_id.strip()}") from None


def cmd_store(args: argparse.Namespace, out: Output) -> int:
    content = sys.stdin.read() if args.content == "-" else args.content
    fields = _store_fields(args)
    if args.context is not None:
        fields["context"] = args.context
    with open_store(args) as store:
        memory_id = store.store(content, **fields)
        if out.as_json:
            out.json({"status": "success", "memory_id": memory_id, "memory": store.get(memory_id)})
        else:
            out.line(memory_id)
    return EXIT_OK


def recall_params(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if args.query is not None:
        params["query"] = args.query
    simple = ("limit", "tag_mode", "tag_match", "time_query", "start", "end", "sort", "context",
              "expand_relations", "state_mode")
    for name in simple:
        value = getattr(args, name)
        if value is not None:
            params[name] = value
    tags = _split_list(args.tags)
    if tags is not None:
        params["tags"] = tags
    excluded = _split_list(args.exclude_tags)
    if excluded is not None:
        params["exclude_tags"] = excluded
    params.update(_key_values(args.param, "--param"))
    return params


def recall_lines(response: dict[str, Any]) -> list[str]:
    rows = []
    for rank, result in enumerate(response.get("results", []), 1):
        memory = result.get("memory") or {}
        rows.append([str(rank), f"{result.get('final_score', 0.0):.3f}", str(result.get("match_type", "")),
                     short(memory.get("content", ""), 200), ", ".join(memory.get("tags") or []),
                     str(result.get("id", ""))])
    lines = table(["#", "score", "match", "content", "tags", "id"], rows, flex=3,
                  caps={4: 24}, right=(0, 1)) if rows else ["no memories found"]
    vector = response.get("vector_search") or {}
    summary = [f"{response.get('count', len(rows))} result{'' if len(rows) == 1 else 's'}",
               f"vector search {'on' if vector.get('enabled') else 'off'}"]
    if response.get("sort") not in (None, "score"):
        summary.append(f"sorted {response['sort']}")
    if response.get("query_time_ms") is not None:
        summary.append(f"{response['query_time_ms']:.0f} ms")
    window = response.get("time_window")
    if window:
        summary.append(f"window {window.get('start') or '...'} to {window.get('end') or '...'}")
    state = response.get("state_filter") or {}
    if state.get("suppressed_count"):
        summary.append(f"{state['suppressed_count']} not current hidden (--state-mode history shows them)")
    expansion = response.get("expansion")
    if expansion:
        summary.append(f"{expansion.get('expanded_count', 0)} related by expansion")
    lines.append("")
    lines.append("(" + "; ".join(summary) + ")")
    if response.get("degraded"):
        lines.append(f"note: degraded ({response.get('degraded_reason')}): answered without the vector "
                     "channel, from keyword, tag and graph matches")
    return lines


def cmd_recall(args: argparse.Namespace, out: Output) -> int:
    params = recall_params(args)
    with open_store(args, must_exist=True) as store:
        response = store.recall(**params)
        if out.as_json:
            out.json(response)
            return EXIT_OK
        out.lines(recall_lines(response))
        if response.get("degraded") and store.embedder_error:
            out.note(f"warning: {store.embedder_error}")
    return EXIT_OK


def cmd_get(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store, _naming(args.id):
        record = store.get(args.id)
    if out.as_json:
        out.json(record)
    else:
        out.lines(record_lines(record))
    return EXIT_OK


def cmd_update(args: argparse.Namespace, out: Output) -> int:
    fields = _store_fields(args)
    if args.content is not None:
        fields["content"] = sys.stdin.read() if args.content == "-" else args.content
    if not fields:
        raise ValidationError("nothing to update: give --content, --tags, --importance, --confidence, "
                              "--type, --timestamp, --t-valid, --t-invalid or --metadata")
    with open_store(args, must_exist=True) as store, _naming(args.id):
        record = store.update(args.id, **fields)
    if out.as_json:
        out.json({"status": "success", "memory_id": record["id"], "memory": record})
    else:
        out.lines(record_lines(record))
    return EXIT_OK


def cmd_delete(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store, _naming(args.id):
        store.delete(args.id)
    memory_id = args.id.strip()
    if out.as_json:
        out.json({"status": "success", "memory_id": memory_id, "deleted": True})
    else:
        out.line(f"deleted {memory_id}")
    return EXIT_OK


def cmd_associate(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        edge = store.associate(args.id1, args.id2, args.type, args.strength)
    if out.as_json:
        out.json({"status": "success", **edge})
    else:
        out.line(f"{edge['memory1_id']} -[{edge['relation_type']}]-> {edge['memory2_id']} "
                 f"(strength {edge['strength']:.2f})")
    return EXIT_OK


def cmd_by_tag(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        page = store.by_tag(args.tags, limit=args.limit, offset=args.offset)
    if out.as_json:
        out.json(page)
        return EXIT_OK
    rows = [[f"{m['importance']:.2f}", (m["timestamp"] or "")[:10], m["type"], short(m["content"], 200),
             ", ".join(m["tags"]), m["id"]] for m in page["memories"]]
    if rows:
        out.lines(table(["imp.", "date", "type", "content", "tags", "id"], rows, flex=3, caps={4: 24}))
    else:
        out.line("no memories with " + ", ".join(page["tags"]))
    first = page["offset"] + 1 if rows else page["offset"]
    more = f"; more with --offset {page['next_offset']}" if page.get("has_more") else ""
    out.line("")
    out.line(f"(showing {first}-{page['offset'] + page['count']}{more})")
    return EXIT_OK


def _count_lines(path: Path) -> int:
    with open(path, "rb") as fp:
        return sum(1 for line in fp if line.strip())


def cmd_import(args: argparse.Namespace, out: Output) -> int:
    from .progress import ProgressBar
    from .maintenance.transfer import Importer

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
        bar = ProgressBar(total, "importing", stream=out.stderr) if show_progress else None
        if bar is not None:
            stack.callback(bar.close)
        importer = Importer(store, chunk_size=args.batch_size, progress=bar,
                            embed_missing=args.embed_missing, reembed=args.reembed,
                            skip_existing=args.skip_existing)
        try:
            for lineno, text in enumerate(lines, 1):
                importer.feed(lineno, text)
            result = importer.finish()
        except ValidationError as exc:
            kept = importer.result.memories
            if kept:
                exc.message += (f" (nothing of that chunk was written; {kept} memories from earlier "
                                "chunks were imported)")
                exc.args = (exc.message,)
            raise
        embedder_error = store.embedder_error
    if out.as_json:
        out.json({"status": "success", **result.as_dict()})
    else:
        text = f"imported {result.memories} memories and {result.edges} edges"
        if result.skipped:
            text += f" ({result.skipped} existing memories skipped)"
        out.line(text)
    if result.not_embedded:
        out.note(f"warning: {result.not_embedded} memories were stored without an embedding "
                 f"({embedder_error or 'the embedder is unavailable'}); run 'localmem doctor --repair' "
                 "with a working embedder to add them")
    return EXIT_OK


def cmd_export(args: argparse.Namespace, out: Output) -> int:
    from .maintenance.transfer import export_jsonl

    with open_store(args, must_exist=True) as store:
        if args.file == "-":
            stream = out.stdout
            if (hasattr(stream, "reconfigure")
                    and (getattr(stream, "encoding", "") or "").lower().replace("-", "") != "utf8"):
                stream.reconfigure(encoding="utf-8")
            export_jsonl(store, stream)
            stream.flush()
            return EXIT_OK
        target = Path(args.file).expanduser()
        target.parent.mkdir(parents=True, exist_ok=True)
        # Write next to the target, then rename: an interrupted export never
        # leaves a half-written file under the final name.
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fp:
                memories, edges = export_jsonl(store, fp)
            os.replace(temp, target)
        except BaseException:
            if os.path.exists(temp):
                os.unlink(temp)
            raise
    if out.as_json:
        out.json({"status": "success", "path": str(target), "memories": memories, "edges": edges})
    else:
        out.line(f"exported {memories} memories and {edges} edges to {target}")
    return EXIT_OK


def collect_stats(store: MemoryStore, top: int) -> dict[str, Any]:
    """``store.health()`` plus type, context, edge-type and tag counts and the time span."""
    def pairs(name: str, **bindings: Any) -> list[tuple[str, int]]:
        with store._lock:
            return [(row[0], row[1]) for row in store.conn.execute(store.sql[name], bindings)]

    health = store.health()
    with store._lock:
        overview = store.conn.execute(store.sql["stats_overview"]).fetchone()
    return {
        "status": "success",
        **health,
        "types": dict(pairs("stats_types")),
        "contexts": dict(pairs("stats_contexts")),
        "edge_types": dict(pairs("stats_edge_types")),
        "top_tags": [{"tag": tag, "count": count} for tag, count in pairs("stats_top_tags", limit=max(0, top))],
        "oldest": overview[0],
        "newest": overview[1],
        "archived_count": overview[2] or 0,
        "invalidated_count": overview[3] or 0,
    }


def stats_lines(stats: dict[str, Any]) -> list[str]:
    def counts(mapping: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in mapping.items()) or "-"

    embedder = stats["embedder"]
    dims = f"{embedder['dimensions']} dimensions" if embedder.get("dimensions") else "no vector index"
    embedder_text = f"{embedder['name']}, {dims}"
    if embedder.get("recorded") and embedder["recorded"] != embedder["name"]:
        embedder_text += f" (database made with {embedder['recorded']})"
    if embedder.get("error"):
        embedder_text += f" - unavailable: {embedder['error']}"
    rows = [
        ("database", f"{stats['path']} ({human_size(stats['file_size_bytes'])}, schema {stats['schema_version']})"),
        ("embedder", embedder_text),
        ("memories", (f"{stats['memory_count']} ({stats['archived_count']} archived, "
                      f"{stats['invalidated_count']} invalidated or superseded)")),
        ("indexes", (f"{stats['fts_count']} full-text rows, {stats['embedding_count']} embeddings, "
                     f"{stats['vector_count']} vectors, {stats['tag_count']} tag rows - "
                     + ("agree" if stats["indexes_agree"] else "DISAGREE (run localmem doctor)"))),
        ("edges", f"{stats['edge_count']}" + (f" ({counts(stats['edge_types'])})" if stats["edge_types"] else "")),
        ("time span", f"{stats['oldest']} to {stats['newest']}" if stats["oldest"] else "-"),
        ("types", counts(stats["types"])),
        ("contexts", counts(stats["contexts"])),
        ("top tags", ", ".join(f"{t['tag']} {t['count']}" for t in stats["top_tags"]) or "-"),
    ]
    if stats["memories_without_embedding"]:
        rows.insert(4, ("no vector", f"{stats['memories_without_embedding']} memories have no embedding"))
    width = max(len(name) for name, _ in rows)
    return [f"{name.ljust(width)}  {value}" for name, value in rows]


def cmd_stats(args: argparse.Namespace, out: Output) -> int:
    with open_store(args, must_exist=True) as store:
        stats = collect_stats(store, args.top)
    if out.as_json:
        out.json(stats)
    else:
        out.lines(stats_lines(stats))
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


def cmd_doctor(args: argparse.Namespace, out: Output) -> int:
    from .maintenance import doctor

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
                done = [f"{actions.get('fts_rows_rebuilt', 0)} full-text rows rebuilt",
                        f"{actions.get('memories_retagged', 0)} memories re-tagged"]
                if "vector_rows_rebuilt" in actions:
                    done.append(f"{actions['vector_rows_rebuilt']} vector rows rebuilt")
                done.append(f"{actions.get('memories_embedded', 0)} memories embedded")
                for key, label in (("dangling_edges_removed", "dangling edges removed"),
                                   ("invalid_embeddings_removed", "invalid embeddings removed")):
                    if actions.get(key):
                        done.append(f"{actions[key]} {label}")
                out.line("")
                out.line("repair: " + ", ".join(done))
                if actions.get("embedder_error"):
                    out.line(f"  could not embed: {actions['embedder_error']}")
                remaining = [c for c in after if not c.ok]
                if remaining:
                    out.line("after repair:")
                    out.lines(_check_lines(remaining))
    report["status"] = "ok" if not final else "problems"
    report["remaining_problem_count"] = len(final)
    if out.as_json:
        out.json(report)
    elif not final:
        out.line("no problems found" if not args.repair else "no problems remain")
    else:
        hint = "" if args.repair else "; 'localmem doctor --repair' rebuilds the derived indexes"
        if any(c.name == "integrity" for c in final):
            hint += "; the file itself is damaged: restore it from an export or a backup"
        out.line(f"{len(final)} problem{'' if len(final) == 1 else 's'} found{hint}")
    return EXIT_OK if not final else EXIT_ERROR


def cmd_backup(args: argparse.Namespace, out: Output) -> int:
    from .maintenance.backup import backup_database

    path = db_path(args)
    if path == MEMORY_PATH:
        raise ValidationError("an in-memory database cannot be backed up; give --db PATH")
    result = backup_database(path, args.dest, overwrite=args.force)
    if out.as_json:
        out.json(result)
    else:
        out.line(f"backed up {result['memories']} memories and {result['edges']} edges to {result['path']} "
                 f"({human_size(result['bytes'])}, schema {result['schema_version']})")
    return EXIT_OK


def cmd_restore(args: argparse.Namespace, out: Output) -> int:
    from .maintenance import doctor
    from .maintenance.backup import restore_database

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
        out.line(f"restored {result['memories']} memories and {result['edges']} edges from {result['source']} "
                 f"into {result['path']}")
        if result["saved_previous"]:
            out.line(f"the previous contents were saved to {result['saved_previous']}")
        if found:
            out.line(f"{len(found)} problem(s) found: run 'localmem doctor' for details")
    return EXIT_OK if not found else EXIT_ERROR


def cmd_demo(args: argparse.Namespace, out: Output) -> int:
    from .demo import run_demo

    explicit = getattr(args, "db", None)
    with tempfile.TemporaryDirectory(prefix="localmem-demo-") as folder:
        path = explicit or os.path.join(folder, "demo.db")
        with open_store(args, path=path) as store:
            existing = store.health()["memory_count"]
            if existing:
                raise LocalMemError(f"the demo needs an empty database; {path} already has "
                                    f"{existing} memories")
            embedder = store.embedder.name if store.embedder is not None else "none"
            if not out.as_json:
                where = path if explicit else f"{path} (temporary; --db PATH keeps it)"
                out.line(f"localmem demo - database {where}, embedder {embedder}")
            result = run_demo(store, out=out.line, as_json=out.as_json)
            if out.as_json:
                out.json({"status": "success", "path": path, "embedder": embedder,
                          "embedder_error": store.embedder_error, **result})
            elif result["degraded"]:
                out.line("")
                out.line("The embedding model was unavailable, so this ran degraded (no vector channel).")
    return EXIT_OK


def cmd_serve(args: argparse.Namespace, out: Output) -> int:
    from .http.security import check_bind, resolve_token, resolve_tokens

    token = resolve_token(None)
    # Refuse a non-loopback bind without any token (single or scoped) before opening anything.
    check_bind(args.host, next(iter(resolve_tokens(token)), None))
    from .http.server import serve

    with open_store(args) as store:
        serve(store, host=args.host, port=args.port, token=token, log_level=args.log_level)
    return EXIT_OK


def cmd_embedder(args: argparse.Namespace, out: Output) -> int:
    from .embedders import model_for_spec
    from .embedders.onnx_cache import status
    from .embedders.onnx_export import export_model

    model = args.model or model_for_spec(choose_embedder(getattr(args, "embedder", None), db_path(args)))
    if args.action == "status":
        info = status(model)
        if out.as_json:
            out.json(info)
        else:
            for key in ("model", "folder", "path", "exported", "error", "last_auto_export_error"):
                if info.get(key) is not None:
                    out.line(f"{key:<9}  {info[key]}")
            missing = [m for m, ok in info["runtime"].items() if not ok]
            out.line(f"runtime    {'missing ' + ', '.join(missing) if missing else 'ok'}")
            if info.get("export"):
                export = info["export"]
                out.line(f"created    {export['created']} (min cosine vs sentence-transformers "
                         f"{export['verify_min_cosine']:.6f})")
        return EXIT_OK if info.get("exported") else EXIT_ERROR
    report = export_model(model, force=args.force)
    if out.as_json:
        out.json(report)
    elif report["status"] == "cached":
        out.line(f"already exported: {report['path']}")
    else:
        out.line(f"exported {report['model']} to {report['path']} in {report['seconds']:.1f} s "
                 f"(min cosine vs sentence-transformers {report['verify_min_cosine']:.6f})")
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace, out: Output) -> int:
    from .mcp_server.__main__ import store_factory

    try:
        from .mcp_server.server import run_stdio
    except ImportError as exc:
        raise LocalMemError(f"the MCP server needs the 'mcp' extra (pip install 'localmem[mcp]'): {exc}") from exc
    run_stdio(store_factory(getattr(args, "db", None), getattr(args, "embedder", None)))
    return EXIT_OK


# -- entry point -----------------------------------------------------------


def _show_warning(message: Any, category: Any, filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    sys.stderr.write(f"warning: {message}\n")


def _exit_code(code: Any) -> int:
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (argparse exits 2)
        return _exit_code(exc.code)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    out = Output(bool(getattr(args, "json", False)))
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning  # "warning: ..." lines, not file:line dumps
        try:
            return func(args, out)
        except ValidationError as exc:
            out.note(f"error: {exc.message}")
            return EXIT_USAGE
        except LocalMemError as exc:
            out.note(f"error: {exc.message}")
            return EXIT_ERROR
        except apsw.Error as exc:
            out.note(f"error: database error: {exc}")
            return EXIT_ERROR
        except BrokenPipeError:
            # The reader went away (say, `localmem export | head`): stop quietly.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            return EXIT_ERROR
        except OSError as exc:
            out.note(f"error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""))
            return EXIT_ERROR
        except KeyboardInterrupt:
            out.note("interrupted")
            return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
