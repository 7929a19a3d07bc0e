"""``localmem audit``: what the store keeps that it should not, or need not, with counts per source.

- credentials: memories where the detector (privacy/redact.py) finds a secret, by kind;
- exact duplicates: later copies sharing an older memory's dedup key (docs/dedup.md);
- near duplicates: among the first ``near_sample`` memories, those with a current memory of
  the same context at cosine ≥ the dedup threshold (recall/duplicates.py), each pair once;
- capture noise: captured turns that capture's rules, as they are now, would skip
  (hooks/capture.py ``turn_of``);
- never recalled: memories whose ``last_accessed`` was never moved past their last write
  (recall sets it, when ``Config.track_access`` is on).

The source of a memory is its ``metadata.source``, else its ``source:`` tag, else ``unknown``.
``redact=True`` rewrites each memory holding a credential with it redacted and scrubs the
old text from the files as ``forget`` does.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from ..hooks.capture import turn_of
from ..hooks.noise_rules import load_rules
from ..privacy import redact_item
from ..recall import duplicates
from ..timeparse import format_timestamp
from .copies import list_copies
from .forget import scan_memories, scrub, secret_kinds, secure_deletes

if TYPE_CHECKING:
    from ..store import MemoryStore

CAPTURED_SOURCE = "claude-code-hook"  # hooks/capture.py's metadata.source


def source_of(metadata: dict[str, Any], tags: list[str]) -> str:
    if isinstance(metadata.get("source"), str) and metadata["source"].strip():
        return metadata["source"][:64]
    for tag in tags:
        if isinstance(tag, str) and tag.lower().startswith("source:"):
            return tag[7:71] or "unknown"
    return "unknown"


def _section() -> dict[str, Any]:
    return {"count": 0, "by_source": Counter()}


def _count(section: dict[str, Any], source: str) -> None:
    section["count"] += 1
    section["by_source"][source] += 1


def _is_noise(memory_id: str, content: str, metadata: dict[str, Any], rules: Any) -> bool:
    role = metadata.get("role") if metadata.get("role") in ("user", "assistant") else "user"
    entry = {"type": role, "uuid": memory_id, "message": {"role": role, "content": content}}
    return turn_of(entry, rules, Counter()) is None


def audit(store: "MemoryStore", *, redact: bool = False, near_sample: int = 2000) -> dict[str, Any]:
    """The audit report (module docstring); ``redact`` also purges the credentials found."""
    if not isinstance(near_sample, int) or isinstance(near_sample, bool) or not 0 <= near_sample <= 100_000:
        from ..errors import ValidationError
        raise ValidationError(f"near_sample must be an integer from 0 to 100000, got {near_sample!r}")
    rules = load_rules(None)
    sections = {name: _section() for name in ("credentials", "exact_duplicates", "near_duplicates", "noise",
                                              "never_recalled")}
    kinds: Counter[str] = Counter()
    with store.lock:
        exact = {row[0] for row in store.conn.execute(store.sql["audit_exact_copies"])}
    now_iso = format_timestamp(store.now())
    to_redact: list[tuple[str, str, dict[str, Any]]] = []
    near_pairs: set[frozenset[str]] = set()
    total = 0
    for pk, memory_id, content, metadata_json, tags_json, context, last_accessed, updated_at in scan_memories(store):
        total += 1
        metadata = _json(metadata_json, {})
        source = source_of(metadata, _json(tags_json, []))
        found = secret_kinds(content, metadata_json)
        if found:
            _count(sections["credentials"], source)
            kinds.update(found)
            to_redact.append((memory_id, content, metadata))
        if pk in exact:
            _count(sections["exact_duplicates"], source)
        if metadata.get("source") == CAPTURED_SOURCE and _is_noise(memory_id, content, metadata, rules):
            _count(sections["noise"], source)
        if (last_accessed or "") <= (updated_at or ""):
            _count(sections["never_recalled"], source)
        if total <= near_sample:
            with store.lock:
                row = store.conn.execute(store.sql["audit_embedding"], {"pk": pk}).fetchone()
                similar = duplicates.similar_existing(store.backend, row[0] if row else None, context, now_iso)
            for other in similar or []:
                pair = frozenset((memory_id, other["id"]))
                if other["id"] != memory_id and pair not in near_pairs:
                    near_pairs.add(pair)
                    _count(sections["near_duplicates"], source)
    sections["credentials"]["kinds"] = dict(sorted(kinds.items()))
    sections["near_duplicates"]["note"] = (f"checked the first {min(total, near_sample)} of {total} memories"
                                           if total > near_sample else None)
    sections["noise"]["note"] = "captured turns only (metadata.source claude-code-hook), by today's capture rules"
    if not store.config.track_access:
        sections["never_recalled"]["note"] = "track_access is off: recall does not record access"
    report: dict[str, Any] = {"memories": total}
    for name, section in sections.items():
        report[name] = {k: v for k, v in section.items() if v is not None}
        report[name]["by_source"] = dict(section["by_source"].most_common())
    if redact:
        report.update(purge_credentials(store, to_redact))
    return report


def purge_credentials(store: "MemoryStore", found: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    """Rewrite each memory redacted (secure_delete on), then scrub the files; the answer has
    ``redacted`` (how many), ``scrub`` and the ``copies`` made before (they keep the text)."""
    done = 0
    with store.lock:
        copies = list_copies(store.conn, store.sql)
        with secure_deletes(store.conn):
            for memory_id, content, metadata in found:
                clean = redact_item({"content": content, "metadata": metadata})
                store.update(memory_id, content=clean["content"], metadata=clean["metadata"])
                done += 1
        report = scrub(store)
    return {"redacted": done, "scrub": report, "copies": copies}


def _json(text: str | None, default: Any) -> Any:
    try:
        value = json.loads(text) if text else default
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default
