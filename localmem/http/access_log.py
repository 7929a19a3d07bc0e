"""uvicorn's access log without query strings (``localmem serve`` and ``localmem ui``).

A query string holds what a recall asked (``GET /recall?query=...``), a token a client sent as
``?api_key=``, the browser's one-time sign-in code (``/ui/login?code=...``). The access log goes
to the terminal, and from there to whatever keeps the server's output (a journal, a log file
others may read), so at the default levels it shows the path and the status only, with
``?(query not logged)`` where a query string was. ``--log-level debug`` (or ``trace``) shows it
whole, as uvicorn does, and the server says so as it starts.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

from uvicorn.config import LOGGING_CONFIG
from uvicorn.logging import AccessFormatter

__all__ = ["HIDDEN_QUERY", "PathOnlyAccessFormatter", "log_config", "logs_queries"]

HIDDEN_QUERY = "?(query not logged)"
LEVELS_THAT_LOG_QUERIES = ("debug", "trace")


def logs_queries(log_level: str | int | None) -> bool:
    """Whether the access log shows query strings at this uvicorn log level."""
    if isinstance(log_level, str):
        return log_level.lower() in LEVELS_THAT_LOG_QUERIES
    return isinstance(log_level, int) and log_level <= logging.DEBUG


def path_only(full_path: str) -> str:
    """``/recall?query=x`` as ``/recall?(query not logged)``; a path without a query as it is."""
    path, has_query, _ = full_path.partition("?")
    return path + HIDDEN_QUERY if has_query else path


class PathOnlyAccessFormatter(AccessFormatter):
    """uvicorn's access line with the request's query string left out."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record = copy.copy(record)
            record.args = (args[0], args[1], path_only(args[2]), args[3], args[4])
        else:  # not uvicorn's access line as known: its arguments are not shown at all
            record = copy.copy(record)
            record.args = ("-", "-", "(request not logged)", "-", 0)
        return super().formatMessage(record)


def log_config(log_level: str | int | None) -> dict[str, Any]:
    """uvicorn's logging configuration, its access lines without query strings unless
    ``log_level`` is debug or trace. A new dict each time (uvicorn writes into it)."""
    config = copy.deepcopy(LOGGING_CONFIG)
    if not logs_queries(log_level):
        config["formatters"]["access"]["()"] = f"{__name__}.PathOnlyAccessFormatter"
    return config
