"""Load the SQL statements kept as ``.sql`` files in ``localmem/sql/``.

A statement may include a shared fragment (say, the recall scope filter) by
writing ``{{fragment_name}}`` where the fragment's text belongs.
"""

from __future__ import annotations

import re
from importlib import resources

_INCLUDE = re.compile(r"\{\{(\w+)\}\}")


class Statements:
    """SQL text by file name (without ``.sql``), read once per instance."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        sql = self._cache.get(name)
        if sql is None:
            raw = resources.files("localmem").joinpath("sql", f"{name}.sql").read_text("utf-8")
            sql = _INCLUDE.sub(lambda m: self[m.group(1)].strip().rstrip(";"), raw)
            self._cache[name] = sql
        return sql
