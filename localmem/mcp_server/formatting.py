"""recall_memory response shaping and budgeting (``mcp-automem``'s ``src/recall-memory.ts``).

Pure functions, no SDK import. The flow:

1. A store answer becomes a *recall result*: ``{"results": [item...], "count", "mode", ...}``
   where each item is ``{"id", "match_type", "final_score", ..., "memory": {"memory_id",
   "content", "created_at", ...}}`` — :func:`ranked_result`, :func:`enumeration_result`,
   :func:`id_fetch_result` (``recall_results.py``; re-exported here for the tools).
2. :func:`build_recall_response` renders it in one of the formats (text, items,
   detailed, json) and applies the response budget, giving a
   :class:`RecallResponse` (text blocks + ``structuredContent``).

Budget rules: "budgeted" means not an id fetch and format ≠ json. Budgeted
items carry a 400-character content preview (``content_truncated``,
``content_chars``); a stored summary is an additional field (it stands in for
the preview in the text channel only when the content is empty); detailed
collapses metadata to ``metadata_keys`` and relations to ≤ 3 stubs with
100-character summaries (``relations_total`` when more). Each item costs the
JSON length of its structured form plus its text block (json: minified plus
pretty-printed length); tokens = ceil(chars / 2.5). With 800 tokens reserved
for the envelope, items are kept in order while the running total stays within
the budget (default 18,000 tokens, ``AUTOMEM_RECALL_TOKEN_BUDGET``); the first
item is always kept, except in enumeration mode, where a first record that
cannot fit is an error. Id fetches are never trimmed.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..recall.relevance import evidence_text
from ..text import plural
from .recall_results import ENVELOPE_FIELDS, RESULT_FLAGS
from .recall_results import enumeration_result, id_fetch_result, ranked_result  # noqa: F401  (formatting.*)

RECALL_CONTENT_PREVIEW_CHARS = 400
RECALL_MAX_RELATIONS = 3
RECALL_RELATION_SUMMARY_CHARS = 100
RECALL_CHARS_PER_TOKEN = 2.5
DEFAULT_RECALL_TOKEN_BUDGET = 18_000
RESPONSE_ENVELOPE_RESERVE_TOKENS = 800
TOKEN_BUDGET_ENV = "AUTOMEM_RECALL_TOKEN_BUDGET"
TRUNCATION_REASON = "response_token_budget"
ELLIPSIS = "…"
NO_RESULTS_TEXT = "No memories found matching your query."
FORMATS = ("text", "items", "detailed", "json")
MODES = ("ranked", "enumeration", "id_fetch")

_DIGITS = re.compile(r"[0-9]+")


class RecallBudgetError(Exception):
    """The record at the current enumeration offset cannot fit the response budget."""


@dataclass
class RecallResponse:
    """A rendered recall: the text content blocks and the structuredContent object."""

    texts: list[str]
    structured: dict[str, Any]
    kept: int = 0
    omitted: int = 0
    content_truncated: bool = False
    notes: list[str] = field(default_factory=list)


# -- budget arithmetic ---------------------------------------------------------------


def recall_token_budget(environ: Mapping[str, str] | None = None) -> int:
    """``$AUTOMEM_RECALL_TOKEN_BUDGET`` when it is a strict positive integer, else 18,000."""
    env = os.environ if environ is None else environ
    raw = (env.get(TOKEN_BUDGET_ENV) or "").strip()
    if _DIGITS.fullmatch(raw) and int(raw) > 0:
        return int(raw)
    return DEFAULT_RECALL_TOKEN_BUDGET


def estimate_tokens(chars: int) -> int:
    """Estimated tokens of ``chars`` characters of JSON/text: ceil(chars / 2.5)."""
    return math.ceil(chars / RECALL_CHARS_PER_TOKEN) if chars > 0 else 0


def to_json(value: Any, *, pretty: bool = False) -> str:
    """JSON as JavaScript's ``JSON.stringify`` writes it (minified, or 2-space indented)."""
    if pretty:
        return json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def json_length(value: Any, *, pretty: bool = False) -> int:
    return len(to_json(value, pretty=pretty))


def item_cost(structured_item: Mapping[str, Any], text_block: str, fmt: str) -> int:
    """Characters one result adds to the response (json doubles it into the text channel)."""
    if fmt == "json":
        return json_length(structured_item) + json_length(structured_item, pretty=True)
    return json_length(structured_item) + len(text_block)


# -- small renderers ---------------------------------------------------------------------


def js_number(value: Any) -> str:
    """A number as JavaScript prints it in a template string (``1`` not ``1.0``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return str(int(value))
        return repr(value)
    return str(value)


def fixed3(value: Any) -> str:
    return f"{float(value):.3f}"


def content_preview(content: Any, budgeted: bool) -> tuple[str, bool, int]:
    """``(preview, truncated, chars)``: budgeted content over 400 characters → 400 + "…"."""
    text = content if isinstance(content, str) else ("" if content is None else str(content))
    if not budgeted or len(text) <= RECALL_CONTENT_PREVIEW_CHARS:
        return text, False, len(text)
    return text[:RECALL_CONTENT_PREVIEW_CHARS] + ELLIPSIS, True, len(text)


def cap_text(text: Any, limit: int) -> str:
    value = text if isinstance(text, str) else ("" if text is None else str(text))
    return value if len(value) <= limit else value[:limit] + ELLIPSIS


def metadata_keys(metadata: Any) -> list[str]:
    return list(metadata.keys()) if isinstance(metadata, Mapping) else []


def relation_stub(relation: Mapping[str, Any]) -> dict[str, Any]:
    """A compact relation: id, from, type, strength, kind and a ≤ 100-character summary."""
    memory = relation.get("memory") if isinstance(relation.get("memory"), Mapping) else {}
    stub: dict[str, Any] = {}
    target = memory.get("id") or relation.get("id") or relation.get("memory_id")
    if target:
        stub["id"] = target
    if relation.get("from"):
        stub["from"] = relation["from"]
    for key in ("type", "strength", "kind"):
        if relation.get(key) is not None:
            stub[key] = relation[key]
    summary = memory.get("summary") or memory.get("content") or relation.get("summary")
    if summary:
        stub["summary"] = cap_text(summary, RECALL_RELATION_SUMMARY_CHARS)
    return stub


def relation_stubs(relations: Any) -> tuple[list[dict[str, Any]], int]:
    """At most three stubs and the total number of relations."""
    if not isinstance(relations, Sequence) or isinstance(relations, (str, bytes)):
        return [], 0
    items = [r for r in relations if isinstance(r, Mapping)]
    return [relation_stub(r) for r in items[:RECALL_MAX_RELATIONS]], len(items)


def _drop_none(mapping: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if v is not None}


# -- per-item structured form and text blocks --------------------------------------------------


def structured_item(item: Mapping[str, Any], fmt: str, *, budgeted: bool, id_fetch: bool
                    ) -> tuple[dict[str, Any], str, bool]:
    """``(structured item, preview text, content_truncated)`` for one result."""
    memory = item.get("memory") or {}
    content = memory.get("content") or ""
    preview, truncated, chars = content_preview(content, budgeted)
    summary = memory.get("summary") if isinstance(memory.get("summary"), str) else None
    rich = fmt in ("detailed", "json")
    out: dict[str, Any] = {"memory_id": memory.get("memory_id") or item.get("id")}
    # The summary is additive; in budgeted formats it is left out when it only repeats the content.
    if summary and (not budgeted or summary.strip() != content.strip()):
        out["summary"] = summary
    out["content"] = preview
    if truncated:
        out["content_truncated"] = True
        out["content_chars"] = chars
    out.update({
        "tags": memory.get("tags") or [],
        "importance": memory.get("importance"),
        "created_at": memory.get("created_at"),
        "updated_at": memory.get("updated_at"),
        "final_score": item.get("final_score"),
        "match_type": item.get("match_type"),
    })
    if isinstance(item.get("relevance"), (int, float)):  # recall's calibrated relevance
        out["relevance"] = item["relevance"]
    if fmt == "json" or id_fetch:
        out["t_valid"] = memory.get("t_valid")
        out["t_invalid"] = memory.get("t_invalid")
        out["archived"] = memory.get("archived")
    if rich:
        out["last_accessed"] = memory.get("last_accessed")
        out["type"] = memory.get("type")
        out["confidence"] = memory.get("confidence")
        if budgeted:
            keys = metadata_keys(memory.get("metadata"))
            if keys:
                out["metadata_keys"] = keys
        else:
            out["metadata"] = memory.get("metadata") or {}
        out["match_score"] = item.get("match_score")
        out["relation_score"] = item.get("relation_score")
        out["source"] = item.get("source")
        relations = item.get("relations") or []
        if budgeted:
            stubs, total = relation_stubs(relations)
            out["relations"] = stubs
            if total > len(stubs):
                out["relations_total"] = total
        else:
            out["relations"] = relations
    if fmt == "json" or id_fetch:
        out["score_components"] = item.get("score_components") or {}
    for flag in RESULT_FLAGS:
        if item.get(flag) not in (None, [], False):
            out[flag] = item[flag]
    return _drop_none(out), preview, truncated


def text_preview(item: Mapping[str, Any], preview: str) -> str:
    """What the text channel shows: the preview, or the summary when the content is empty."""
    if preview:
        return preview
    summary = (item.get("memory") or {}).get("summary")
    return summary if isinstance(summary, str) else ""


def render_text_block(item: Mapping[str, Any], preview: str, index: int) -> str:
    memory = item.get("memory") or {}
    tags = memory.get("tags") or []
    parts = [f"{index + 1}. {text_preview(item, preview)}"]
    if tags:
        parts.append(f" [{', '.join(tags)}]")
    if isinstance(memory.get("importance"), (int, float)) and not isinstance(memory.get("importance"), bool):
        parts.append(f" (importance: {js_number(memory['importance'])})")
    if isinstance(item.get("final_score"), (int, float)):
        parts.append(f" score={fixed3(item['final_score'])}")
    if item.get("match_type"):
        parts.append(f" [{item['match_type']}]")
    relations = item.get("relations")
    if isinstance(relations, list) and relations:
        parts.append(f" relations={len(relations)}")
    if item.get("expanded_from_entity"):
        parts.append(f" [via entity: {item['expanded_from_entity']}]")
    if item.get("outside_tag_scope"):
        parts.append(" [outside tag scope]")
    deduped = item.get("deduped_from")
    if isinstance(deduped, list) and deduped:
        parts.append(f" (deduped x{len(deduped)})")
    updated = f"  Updated: {memory['updated_at']}" if memory.get("updated_at") else ""
    return (f"{''.join(parts)}\n   ID: {memory.get('memory_id', '')}"
            f"\n   Created: {memory.get('created_at', '')}{updated}")


def render_detailed_block(item: Mapping[str, Any], preview: str) -> str:
    memory = item.get("memory") or {}
    lines = [text_preview(item, preview), f"  ID: {memory.get('memory_id', '')}"]
    if memory.get("type"):
        lines.append(f"  Type: {memory['type']}")
    lines.append(f"  Created: {memory.get('created_at', '')}")
    if memory.get("updated_at"):
        lines.append(f"  Updated: {memory['updated_at']}")
    if memory.get("last_accessed"):
        lines.append(f"  Accessed: {memory['last_accessed']}")
    if isinstance(memory.get("importance"), (int, float)):
        lines.append(f"  Importance: {fixed3(memory['importance'])}")
    if isinstance(memory.get("confidence"), (int, float)):
        lines.append(f"  Confidence: {fixed3(memory['confidence'])}")
    if memory.get("tags"):
        lines.append(f"  Tags: {', '.join(memory['tags'])}")
    if isinstance(item.get("final_score"), (int, float)):
        lines.append(f"  Score: {fixed3(item['final_score'])}")
    if item.get("match_type"):
        lines.append(f"  Match: {item['match_type']}")
    return "\n".join(lines)


def render_items_block(item: Mapping[str, Any], preview: str) -> str:
    memory = item.get("memory") or {}
    return f"[{memory.get('memory_id', '')}] {text_preview(item, preview)}"


# -- envelope, notes, trailer ------------------------------------------------------------------


def envelope(result: Mapping[str, Any]) -> dict[str, Any]:
    """The non-results fields of a recall result that go into structuredContent."""
    return {k: result[k] for k in ENVELOPE_FIELDS if result.get(k) is not None}


def confidence_note(confidence: Any) -> str | None:
    """``match confidence low (relevance 0.20; best cosine 0.31): probably nothing relevant``
    from recall's block."""
    if not isinstance(confidence, Mapping) or confidence.get("level") not in ("none", "low", "moderate", "high"):
        return None
    level, evidence = confidence["level"], evidence_text(dict(confidence))
    advice = {"none": ": likely nothing relevant is stored", "low": ": probably nothing relevant"}.get(level, "")
    return f"match confidence {level}{evidence}{advice}"


def score_filter_notes(result: Mapping[str, Any]) -> list[str]:
    """What the score floor and min_score left out (an empty answer says so too)."""
    score = result.get("score_filter") or {}
    notes = []
    if (score.get("filtered_count") or 0) > 0:
        notes.append(f"{score['filtered_count']} removed by the score floor")
    if (score.get("candidates_below_min_score") or 0) > 0:
        count = score["candidates_below_min_score"]
        notes.append(f"{count} candidate{'' if count == 1 else 's'} below min_score left out")
    return notes


def header_notes(result: Mapping[str, Any]) -> list[str]:
    notes: list[str] = []
    results = result.get("results") or []
    confidence = confidence_note(result.get("confidence")) if results else None
    if confidence:
        notes.append(confidence)
    if (result.get("dedup_removed") or 0) > 0:
        notes.append(f"{result['dedup_removed']} duplicates removed")
    entity = result.get("entity_expansion") or {}
    if entity.get("enabled") and (entity.get("expanded_count") or 0) > 0:
        found = ", ".join(entity.get("entities_found") or []) or "entities found"
        notes.append(f"{entity['expanded_count']} via entity expansion ({found})")
    expansion = result.get("expansion") or {}
    if expansion.get("enabled") and (expansion.get("expanded_count") or 0) > 0:
        notes.append(f"{expansion['expanded_count']} via relation expansion")
    state = result.get("state_filter") or {}
    if (state.get("suppressed_count") or 0) > 0 or (state.get("replacement_count") or 0) > 0:
        notes.append(f"state filter suppressed {state.get('suppressed_count', 0)}, "
                     f"replacements {state.get('replacement_count', 0)}")
    if result.get("scope_fallback"):
        outside = sum(1 for r in results if r.get("outside_tag_scope"))
        notes.append(f"scope fallback: {outside} outside the tag scope")
    notes.extend(score_filter_notes(result))
    if result.get("degraded"):
        notes.append(f"degraded: {result.get('degraded_reason') or 'unknown'} "
                     "(keyword, tag and graph channels only)")
    if result.get("mode") == "enumeration":
        offset = result.get("offset") or 0
        limit = result.get("limit") if result.get("limit") is not None else len(results)
        more = (f" — more pages available (next_offset {result['next_offset']})"
                if result.get("has_more") and result.get("next_offset") is not None
                else " — more pages available" if result.get("has_more") else "")
        notes.append(f"enumeration page: offset {offset}, limit {limit}{more}")
    return notes


def trailer_text(kept: int, total: int, content_truncated: bool) -> str:
    parts: list[str] = []
    omitted = total - kept
    if omitted > 0:
        parts.append(f"Response budget: showing {kept} of {total} results; {omitted} omitted.")
    if content_truncated:
        parts.append('Some content previews truncated — fetch full records with '
                     'recall_memory({ memory_id: "<id>" }).')
    return f"[{' '.join(parts)}]" if parts else ""


# -- the whole response ------------------------------------------------------------------------------


def build_recall_response(result: Mapping[str, Any], fmt: str = "text", *,
                          budget_tokens: int | None = None) -> RecallResponse:
    """Render a recall result in ``fmt`` under the response budget.

    Raises :class:`RecallBudgetError` when, in enumeration mode, the first
    record of the page alone does not fit.
    """
    fmt = fmt or "text"
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}")
    budget = recall_token_budget() if budget_tokens is None else budget_tokens
    results = list(result.get("results") or [])
    mode = result.get("mode")
    id_fetch = mode == "id_fetch"
    budgeted = not id_fetch and fmt != "json"

    warning_text = "".join(f"Warning: {w}\n" for w in result.get("warnings") or [])
    if not results:
        structured = {"results": [], **envelope(result)}
        structured.setdefault("count", 0)
        notes = header_notes(result) if result.get("mode") == "enumeration" else score_filter_notes(result)
        text = NO_RESULTS_TEXT + (f" ({'; '.join(notes)})" if notes else "")
        return RecallResponse([warning_text + text], structured, notes=notes)

    per_item: list[tuple[dict[str, Any], str, bool, int]] = []
    for index, item in enumerate(results):
        structured_one, preview, truncated = structured_item(item, fmt, budgeted=budgeted, id_fetch=id_fetch)
        if fmt == "items":
            block = render_items_block(item, preview)
        elif fmt == "detailed":
            block = render_detailed_block(item, preview)
        elif fmt == "text":
            block = render_text_block(item, preview, index)
        else:
            block = ""
        tokens = estimate_tokens(item_cost(structured_one, block, fmt))
        per_item.append((structured_one, block, truncated, tokens))

    kept_entries: list[tuple[dict[str, Any], str, bool, int]] = []
    if id_fetch:
        kept_entries = per_item
    else:
        running = RESPONSE_ENVELOPE_RESERVE_TOKENS
        for entry in per_item:
            if kept_entries and running + entry[3] > budget:
                break
            if not kept_entries and mode == "enumeration" and running + entry[3] > budget:
                offset = result.get("offset") or 0
                raise RecallBudgetError(
                    f"recall_memory: the record at offset {offset} (id {entry[0].get('memory_id')}) needs about "
                    f"{entry[3]} tokens, more than the response budget of {budget} tokens "
                    f"({RESPONSE_ENVELOPE_RESERVE_TOKENS} reserved for the envelope); fetch it with "
                    f"recall_memory({{ memory_id }}) or raise {TOKEN_BUDGET_ENV}")
            kept_entries.append(entry)
            running += entry[3]
    kept = len(kept_entries)
    omitted = len(per_item) - kept

    env = envelope(result)
    if omitted > 0 and mode == "enumeration":
        # A trimmed page still pages on: the next page starts right after the last record shown.
        offset = int(result.get("offset") or 0)
        env["has_more"] = True
        env["next_offset"] = offset + kept
        env["count"] = kept
    structured: dict[str, Any] = {"results": [e[0] for e in kept_entries], **env}
    if omitted > 0:
        structured["truncation"] = {"applied": True, "omitted_results": omitted, "reason": TRUNCATION_REASON}

    notes = header_notes({**result, **env})
    any_truncated = any(e[2] for e in kept_entries)
    trailer = trailer_text(kept, len(per_item), any_truncated)

    if fmt == "json":
        texts = [to_json(structured, pretty=True)]
    elif fmt == "items":
        texts = [e[1] for e in kept_entries] + ([trailer] if trailer else [])
    else:
        showing = f" (showing {kept})" if omitted > 0 else ""
        notes_suffix = f" ({'; '.join(notes)})" if notes else ""
        body = "\n\n".join(e[1] for e in kept_entries)
        texts = [f"Found {plural(len(per_item), 'memory', 'memories')}{showing}{notes_suffix}:\n\n{body}"
                 + (f"\n\n{trailer}" if trailer else "")]
    if warning_text and fmt == "items":
        texts.insert(0, warning_text.rstrip("\n"))
    elif warning_text and fmt != "json":  # json carries them in its "warnings" field
        texts[0] = warning_text + texts[0]
    return RecallResponse(texts, structured, kept=kept, omitted=omitted,
                          content_truncated=any_truncated, notes=notes)
