"""What a push did (or would do): counts per kind, what was skipped or failed and why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

LISTED = 50  # skipped / failed items listed by name in the summary (all are counted)


@dataclass
class Counts:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: int = 0
    failed: int = 0


class ItemOutcomes:
    """What push and pull summaries share: the per-kind counts (``memories``, ``edges``) and
    the items skipped or failed, listed by name up to ``LISTED`` (all are counted)."""

    memories: Counts
    edges: Counts
    skipped: list[dict[str, Any]]
    failed: list[dict[str, Any]]

    def skip(self, kind: str, ident: str, reason: str) -> None:
        getattr(self, "memories" if kind == "memory" else "edges").skipped += 1
        if len(self.skipped) < LISTED:
            self.skipped.append({"kind": kind, "id": ident, "reason": reason})

    def fail(self, kind: str, ident: str, reason: str) -> None:
        getattr(self, "memories" if kind == "memory" else "edges").failed += 1
        if len(self.failed) < LISTED:
            self.failed.append({"kind": kind, "id": ident, "reason": reason})

    @property
    def nothing_failed(self) -> bool:
        return self.memories.failed == 0 and self.edges.failed == 0


@dataclass
class PushSummary(ItemOutcomes):
    """What a push did (or, with ``dry_run``, would do)."""

    remote: str
    server: str = "unknown"
    dry_run: bool = False
    memories: Counts = field(default_factory=Counts)
    edges: Counts = field(default_factory=Counts)
    embeddings: dict[str, Any] = field(default_factory=lambda: {"sent": 0, "server_embedded": 0})
    skipped: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    recovered: int = 0  # pending creates found on the server after an interrupted push
    duplicates_removed: int = 0
    adopted: int = 0  # memories the server lost that another store had created there again, the same: recorded
    retried: int = 0
    seconds: float = 0.0
    verify: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.nothing_failed and (self.verify is None or self.verify.get("ok", False))

    def as_dict(self) -> dict[str, Any]:
        sent = self.memories.created + self.memories.updated
        return {
            "status": "success" if self.ok else "partial",
            "remote": self.remote, "server": self.server, "dry_run": self.dry_run,
            "memories": dict(self.memories.__dict__), "edges": dict(self.edges.__dict__),
            "embeddings": self.embeddings, "recovered": self.recovered,
            "duplicates_removed": self.duplicates_removed, "adopted": self.adopted, "retried": self.retried,
            "skipped": self.skipped, "failed": self.failed, "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "memories_per_second": round(sent / self.seconds, 1) if self.seconds > 0 and sent else None,
            **({"verify": self.verify} if self.verify is not None else {}),
        }
