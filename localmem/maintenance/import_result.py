"""What an import reports: its counts per kind of line, and the error naming a bad line."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import ValidationError
from .import_stamps import StampCounts


class ImportLineError(ValidationError):
    """A bad line in an import file; ``line`` is its 1-based number."""

    def __init__(self, line: int, message: str, *, last_line: int | None = None) -> None:
        where = f"line {line}" if last_line is None or last_line == line else f"lines {line}-{last_line}"
        super().__init__(f"{where}: {message}")
        self.line = line


@dataclass
class KindCounts:
    """What an import did with the lines of one kind."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0  # --update, and the line equals what is stored
    skipped: int = 0  # --skip-existing, and it exists

    @property
    def written(self) -> int:
        return self.created + self.updated

    def count(self, action: str) -> None:
        name = _COUNTERS[action]
        setattr(self, name, getattr(self, name) + 1)


_COUNTERS = {"create": "created", "update": "updated", "unchanged": "unchanged", "skip": "skipped"}


@dataclass
class ImportResult:
    memory: KindCounts = field(default_factory=KindCounts)
    edge: KindCounts = field(default_factory=KindCounts)
    not_embedded: int = 0  # memories that wanted an embedding but the embedder was unavailable
    without_token_codes: int = 0  # stored with the file's vector, so without token codes (reembed adds them)
    token_codes_kept: str = "the file has no header to check its token codes against"  # or why not
    chunked: bool = False
    older: list[str] = field(default_factory=list)  # --update set these back to the file's older updated_at
    stamps: StampCounts = field(default_factory=StampCounts)  # lines written as the exported version, or why not

    @property
    def memories(self) -> int:
        return self.memory.written

    @property
    def edges(self) -> int:
        return self.edge.written

    @property
    def skipped(self) -> int:
        return self.memory.skipped + self.edge.skipped

    def as_dict(self) -> dict[str, Any]:
        return {"memories": self.memories, "edges": self.edges, "skipped": self.skipped,
                "not_embedded": self.not_embedded, "without_token_codes": self.without_token_codes,
                "why_without_token_codes": self.token_codes_kept if self.without_token_codes else None,
                "mode": "chunked" if self.chunked else "all-or-nothing",
                "older_than_stored": {"count": len(self.older), "ids": list(self.older)},
                "sync_stamps": self.stamps.as_dict(),
                "by_kind": {"memory": asdict(self.memory), "edge": asdict(self.edge)}}
