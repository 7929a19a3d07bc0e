"""store_memory's answers when dedup on write is on (docs/dedup.md): what a deduped write,
a batch with deduped items, and near-duplicates say, in text and in structured output."""

from __future__ import annotations

from typing import Any

from . import formatting


def similar_lines(similar: list[dict[str, Any]]) -> str:
    """The text line listing near-duplicates (empty when there are none)."""
    if not similar:
        return ""
    listed = ", ".join(f"{s['id']} (cosine {formatting.fixed3(s['score'])})" for s in similar)
    return f"\nSimilar existing memories (stored anyway; consider update_memory or a supersede): {listed}"


def deduped_text(memory_id: str, not_applied: list[str]) -> str:
    text = ("Memory already stored: the same content is a current memory of this context and tag set, "
            f"so nothing new was written (pass dedup: false to store a copy).\n\nMemory ID: {memory_id}")
    if not_applied:
        text += (f"\nNot applied (the existing memory keeps its own): {', '.join(not_applied)}"
                 " — use update_memory to change them")
    return text


def batch_answer(results: list[dict[str, Any]], dedup: bool) -> tuple[str, dict[str, Any]]:
    """The batch mode's text and structured output from ``store_many_checked``'s results."""
    ids = [r["id"] for r in results]
    deduped = [i for i, r in enumerate(results) if r["deduped"]]
    stored = len(ids) - len(deduped)
    message = f"Stored {stored} memories" + (f"; {len(deduped)} already stored (deduplicated)" if deduped else "")
    preview = ", ".join(ids[:10]) + (f", …(+{len(ids) - 10})" if len(ids) > 10 else "")
    text = f"{message}.{f'{chr(10)}IDs: {preview}' if preview else ''}"
    if deduped:
        shown = ", ".join(f"memories[{i}] → {ids[i]}" for i in deduped[:10])
        text += f"\nDeduplicated (existing ID returned, nothing new written): {shown}" + (
            f", …(+{len(deduped) - 10})" if len(deduped) > 10 else "")
    similar = sum(1 for r in results if r["similar_existing"])
    if similar:
        text += f"\n{similar} item(s) have similar existing memories (see `items[].similar_existing`)"
    text += f"\nMessage: {message}"
    out: dict[str, Any] = {"stored": stored, "memory_ids": ids, "message": message}
    if dedup:
        out.update(deduped_count=len(deduped),
                   items=[{k: v for k, v in r.items() if k != "similar_checked"} for r in results])
    return text, out
