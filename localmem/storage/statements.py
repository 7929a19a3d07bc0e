"""Load the SQL statements kept as ``.sql`` files in ``localmem/sql/``.

A statement may include a shared fragment (say, the vector kNN) by writing
``{{fragment_name}}`` where the fragment's text belongs. ``compose`` fills
named slots with text chosen at run time (itself assembled from fragment
files, such as the recall scope), so every statement that SQLite sees is
one its planner can optimise for the filters actually in use.
"""

from __future__ import annotations

import re
from importlib import resources

_INCLUDE = re.compile(r"\{\{(\w+)\}\}")
_COMMENT_LINE = re.compile(r"^\s*--.*$\n?", re.MULTILINE)


class Statements:
    """SQL text by file name (without ``.sql``), read once per instance."""

    def __init__(self) -> None:
        self._files: dict[str, str] = {}
        self._cache: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}
        self._fragments: dict[tuple[str, tuple[tuple[str, str], ...]], str] = {}

    def _file(self, name: str) -> str:
        text = self._files.get(name)
        if text is None:
            text = resources.files("localmem").joinpath("sql", f"{name}.sql").read_text("utf-8")
            self._files[name] = text
        return text

    def fragment(self, name: str, **slots: str) -> str:
        """A fragment's SQL without its comment lines or trailing semicolon."""
        # Kept: recall assembles its scope from fragments several times per request.
        key = (name, tuple(sorted(slots.items())))
        text = self._fragments.get(key)
        if text is None:
            text = self._fragments[key] = _COMMENT_LINE.sub("", self.compose(name, **slots)).strip().rstrip(";")
        return text

    def compose(self, name: str, **slots: str) -> str:
        """The statement with ``{{slot}}`` placeholders filled from ``slots``, else from
        the fragment file of that name (at any depth of inclusion)."""
        key = (name, tuple(sorted(slots.items())))
        sql = self._cache.get(key)
        if sql is None:
            sql = _INCLUDE.sub(
                lambda m: slots[m.group(1)] if m.group(1) in slots else self.fragment(m.group(1), **slots),
                self._file(name))
            self._cache[key] = sql
        return sql

    def __getitem__(self, name: str) -> str:
        # The common case, a statement with no slots already read, without building a key.
        sql = self._cache.get((name, ()))
        return sql if sql is not None else self.compose(name)
