"""``python -m localmem.mcp_server [--db PATH] [--embedder NAME]``: the MCP stdio server."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any


def store_factory(db: str | None = None, embedder: str | None = None) -> Callable[[], Any]:
    """A factory opening the store the way the CLI does (nothing is opened until it is called).

    ``db`` defaults to ``$LOCALMEM_DB``, else the user data dir; ``embedder``
    to ``$LOCALMEM_EMBEDDER``, else the one the database was created with,
    else ``auto``.
    """
    def make() -> Any:
        from ..settings import choose_embedder, default_db_path
        from ..store import MemoryStore

        path = db or default_db_path()
        return MemoryStore(path, embedder=choose_embedder(embedder, path))

    return make


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m localmem.mcp_server",
        description="Serve localmem's memory tools (AutoMem's MCP tool set) over stdio.")
    parser.add_argument("--db", metavar="PATH", default=None,
                        help="database file (default: $LOCALMEM_DB, else "
                             "$XDG_DATA_HOME/localmem/memory.db or ~/.local/share/localmem/memory.db)")
    parser.add_argument("--embedder", metavar="NAME", default=None,
                        help="auto, hash, hash:N, none, or a sentence-transformers model name or path "
                             "(default: $LOCALMEM_EMBEDDER, else the database's own, else auto)")
    args = parser.parse_args(argv)
    try:
        lazy = early_store(store_factory(args.db, args.embedder), args.db, args.embedder)
        run_stdio = stdio_runner(lazy)
    except ImportError as exc:
        print(f"error: the MCP server needs the 'mcp' extra (pip install 'localmem[mcp]'): {exc}",
              file=sys.stderr)
        return 1
    try:
        run_stdio(lazy)
    except KeyboardInterrupt:
        return 130
    return 0


def early_store(factory: Callable[[], Any], db: str | None = None, embedder: str | None = None) -> Any:
    """A ``LazyStore`` whose warm-up (open the store, load the models) starts now, before
    the MCP SDK is imported: the two overlap. When the store's warm process runs, its tool
    calls go there instead and nothing is opened (``db``, ``embedder``: as for ``store_factory``).
    ImportError, starting nothing, when the SDK is not installed."""
    import importlib.util

    from ..daemon.client import embedder_choice
    from ..paths import default_db_path
    from .lazy_store import LazyStore

    if importlib.util.find_spec("mcp") is None:
        raise ImportError("No module named 'mcp'")
    lazy = LazyStore(factory)
    if not lazy.use_warm_process(db or default_db_path(), embedder_choice(embedder)):
        lazy.start_warm_up()
    return lazy


def stdio_runner(lazy: Any) -> Callable[[Any], None]:
    """``server.run_stdio``; ImportError (after the warm-up of ``lazy`` has finished and
    its store is closed) when the SDK cannot be imported."""
    try:
        from .server import run_stdio
    except ImportError:
        lazy.close()
        raise
    return run_stdio


if __name__ == "__main__":
    sys.exit(main())
