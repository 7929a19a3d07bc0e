"""Capture: a session's new user and assistant turns, from its transcript, stored verbatim.

Each kept message becomes one memory (or several parts, in order, when it is
longer than a memory may be), threaded by session (``metadata.session``),
tagged ``session:<id>``, ``project:<name>`` and ``source:claude-code``, with
the message's uuid, role and time. Messages are claimed in
``hook_captured`` inside the transaction that stores them, so a hook run
twice, or two runs at once, store each message once.
"""

from __future__ import annotations

import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..errors import ValidationError
from ..privacy import placeholder_counts, redact_after, redaction_note, strip_private
from ..storage.database import transaction
from ..validation import CONTENT_HARD_LIMIT, validate_timestamp
from . import ledger
from .inject import strip_injected
from .message_shape import is_bare_question, is_courtesy, is_retraction, shape_of
from .noise_rules import OWN_TOOL_PREFIXES, NoiseRules
from .retractions import link_retraction
from .transcript import TranscriptRead

if TYPE_CHECKING:
    from ..store import MemoryStore
    from .settings import HookSettings

CAPTURED_IMPORTANCE = 0.4  # below a deliberately stored note's default 0.5
BATCH_MESSAGES = 8  # messages per write transaction: a prompt waits on the lock for one batch's embedding
MAX_MESSAGES = 1024  # per run (a first capture of a long transcript goes on at the next run)
CAPTURE_SECONDS = 8.0  # no new batch is started after this long (the hook's deadline is longer)
SOURCE_TAG = "source:claude-code"
MAX_UUID = 200
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Turn:
    uuid: str
    role: str
    text: str
    timestamp: str | None
    sanitized: bool
    cut: str | None = None  # what shape rules cut out of the message, in words
    retracts: bool = False  # opens by retracting or correcting what came before


def clean_text(text: str) -> tuple[str, bool]:
    """NUL and lone surrogates (which SQLite text cannot hold) become U+FFFD; the rest is kept."""
    cleaned = _SURROGATE.sub("\ufffd", text.replace("\x00", "\ufffd"))
    return cleaned, cleaned != text


def _strip_regions(text: str, regions: Iterable[tuple[str, str]]) -> str:
    for opening, closing in regions:
        pattern = re.compile(re.escape(opening) + r".*?(" + re.escape(closing) + r"|\Z)", re.DOTALL)
        text = pattern.sub("", text)
    return text


def _message_text(content: Any, skipped: Counter[str]) -> str | None:
    """The text blocks of a message; tool blocks, thinking and images are never kept."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = []
    for block in content[:1000]:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "tool_use" and isinstance(block.get("name"), str) \
                and block["name"].startswith(OWN_TOOL_PREFIXES):
            skipped["localmem_tool_call"] += 1
        elif kind in ("tool_use", "tool_result"):
            skipped[kind] += 1
    return "\n\n".join(texts) if texts else None


def turn_of(entry: Mapping[str, Any], rules: NoiseRules, skipped: Counter[str],
            previous: str | None = None) -> Turn | None:
    """The turn a transcript entry holds, or None (the reason counted in ``skipped``). ``previous``: the end of
    the session's previous captured message, whose credential cue makes a lone value after it one (privacy.md)."""
    kind = entry.get("type")
    if kind not in ("user", "assistant"):
        skipped["not_a_message"] += 1
        return None
    for flag in rules.skip_entry_flags:
        if entry.get(flag) is True:
            skipped[f"flag:{flag}"] += 1
            return None
    message = entry.get("message")
    if not isinstance(message, dict):
        skipped["no_message"] += 1
        return None
    role = message.get("role") if isinstance(message.get("role"), str) else kind
    if role not in rules.roles:
        skipped[f"role:{role}"[:40]] += 1
        return None
    message_uuid = entry.get("uuid")
    if not isinstance(message_uuid, str) or not message_uuid.strip() or len(message_uuid) > MAX_UUID:
        skipped["no_uuid"] += 1
        return None
    text = _message_text(message.get("content"), skipped)
    if text is None:
        skipped["no_text"] += 1
        return None
    text, sanitized = clean_text(text)
    message_uuid, _ = clean_text(message_uuid)
    without_block = strip_injected(text)
    if without_block != text:
        skipped["localmem_block_cut"] += 1
    text, private = strip_private(_strip_regions(without_block, rules.strip_regions))  # before any split
    if private:
        skipped["private_region_cut"] += 1
    text = text.strip()
    if not text:
        skipped["empty"] += 1
        return None
    if any(p.search(text) for p in rules.skip_patterns):
        skipped["skip_pattern"] += 1
        return None
    text, cut, rule = _by_shape(text, role, rules)
    if rule is not None:
        skipped[rule] += 1
        return None
    text = redact_after(previous, text).text  # whole, before any split: a secret never straddles parts
    timestamp = entry.get("timestamp")
    try:
        timestamp = validate_timestamp(timestamp, "timestamp") if isinstance(timestamp, str) else None
    except ValidationError:
        timestamp = None
    return Turn(message_uuid, role, text, timestamp, sanitized, cut, is_retraction(text, rules))


def _by_shape(text: str, role: str, rules: NoiseRules) -> tuple[str, str | None, str | None]:
    """The text to keep, what was cut from it (in words), and the rule that skips it (or None)."""
    if len(text) > rules.max_chars * 4:  # not worth labelling line by line: a dump whatever it holds
        return text, None, "too_long"
    shape = shape_of(text, rules)
    cut = None
    if shape.cut_regions:
        if len(shape.text) < rules.prose_min_chars:
            return text, None, "code_or_log"
        cut = (f"{shape.cut_regions} code/log-shaped region(s), {shape.cut_chars} characters, cut; "
               "the prose around them kept")
        text = shape.text
    if len(text) > rules.max_chars:
        return text, None, "too_long"
    if len(text) < rules.min_chars:
        return text, None, "too_short"
    if is_courtesy(text, rules):
        return text, None, "courtesy"
    if rules.skip_bare_questions and role == "user" and is_bare_question(text, rules):
        return text, None, "bare_question"
    return text, cut, None


def split_parts(text: str, limit: int = CONTENT_HARD_LIMIT) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at a paragraph, line, sentence or
    word boundary where one lies in the second half of the piece."""
    parts = []
    rest = text
    while len(rest) > limit:
        window = rest[:limit]
        cut = -1
        for separator in ("\n\n", "\n", ". ", " "):
            at = window.rfind(separator)
            if at >= limit // 2:
                cut = at + len(separator)
                break
        cut = cut if cut > 0 else limit
        piece = rest[:cut].strip()
        if piece:
            parts.append(piece)
        rest = rest[cut:]
    if rest.strip():
        parts.append(rest.strip())
    return parts


def memory_items(turn: Turn, session_id: str, project: str | None, project_path: str | None) -> list[dict[str, Any]]:
    parts = split_parts(turn.text)
    tags = [f"session:{session_id}", SOURCE_TAG] + ([f"project:{project}"] if project else [])
    items = []
    for index, part in enumerate(parts):
        metadata: dict[str, Any] = {"session": session_id, "message_uuid": turn.uuid, "role": turn.role,
                                    "source": "claude-code-hook"}
        if project:
            metadata.update(project=project, project_path=project_path)
        if len(parts) > 1:
            metadata.update(part=index + 1, parts=len(parts))
        if turn.sanitized:
            metadata["sanitized"] = "NUL or lone surrogates replaced by U+FFFD"
        if turn.cut:
            metadata["cut"] = turn.cut
        if placeholder_counts(part):
            metadata["redacted"] = redaction_note(placeholder_counts(part))
        item: dict[str, Any] = {"id": str(uuid.uuid4()), "content": part, "tags": tags, "metadata": metadata,
                                "importance": CAPTURED_IMPORTANCE}
        if turn.timestamp:
            item["timestamp"] = turn.timestamp
        items.append(item)
    return items


def _last_captured(store: "MemoryStore", session_id: str) -> str | None:
    """The text of the session's newest captured memory (an earlier run's last message), or None."""
    with store.lock:
        page = store.list_memories(tags=[f"session:{session_id}"], tag_match="exact", sort="time_desc", limit=1)
    return page["memories"][0]["content"] if page["memories"] else None


def capture(store: "MemoryStore", session_id: str, transcript_path: str, project: str | None,
            project_path: str | None, settings: "HookSettings", rules: NoiseRules) -> dict[str, Any]:
    """Store the session's new turns; returns what was read, stored and skipped (by reason).

    Turns are stored in batches of ``BATCH_MESSAGES``, each batch embedded first (without the
    store's lock), then its claims, memories and read offset in one transaction; a run stops
    starting batches after ``CAPTURE_SECONDS`` or ``MAX_MESSAGES``
    messages and the next run goes on from the last stored turn (``more_to_read``).
    """
    skipped: Counter[str] = Counter()
    with store.lock:
        offset = ledger.transcript_offset(store, session_id, transcript_path)
    read = TranscriptRead(transcript_path, offset, max_bytes=settings.max_read_bytes,
                          max_line_bytes=settings.max_line_bytes, max_lines=settings.max_lines)
    ordered: list[tuple[Turn, int]] = []  # each turn with the offset just past its line
    seen: set[str] = set()
    stop_at = time.monotonic() + CAPTURE_SECONDS
    entries = iter(read)
    cut_short = False  # labelling a turn is most of a run's work: only as many as this run can store
    previous = _last_captured(store, session_id)
    try:
        for entry, end in entries:
            turn = turn_of(entry, rules, skipped, previous)
            if turn is not None and turn.uuid not in seen:
                seen.add(turn.uuid)
                ordered.append((turn, end))
                previous = turn.text
            if len(ordered) > MAX_MESSAGES or time.monotonic() > stop_at:
                cut_short = True
                break
    finally:
        entries.close()
    skipped.update(read.skipped)
    with store.lock:
        known = ledger.captured_among(store, [t.uuid for t, _ in ordered])
    pending = [(t, end) for t, end in ordered if t.uuid not in known]
    stored_messages = stored_memories = deduped = retracted = dumps_cut = 0
    not_linked: list[str] = []  # retraction links the store refused, and why
    done_to = read.end_offset
    more = read.more or (cut_short and read.end_offset < read.size)
    batches = [pending[i:i + BATCH_MESSAGES] for i in range(0, len(pending), BATCH_MESSAGES)] or [[]]
    for index, batch in enumerate(batches):
        if index and (time.monotonic() > stop_at or index * BATCH_MESSAGES >= MAX_MESSAGES):
            done_to, more = batches[index - 1][-1][1], True  # the next run starts after the last stored turn
            break
        last = index == len(batches) - 1
        batch_to = read.resume_at if last else batch[-1][1]
        if not batch and batch_to == offset and not read.restarted:
            break  # nothing new, and the offset stands
        parts_of = [memory_items(turn, session_id, project, project_path) for turn, _ in batch]
        # Redacted (docs/privacy.md) and embedded before the store's lock is taken: a prompt the
        # warm process answers meanwhile waits for this batch's insert, not for the model.
        prepared = store.prepare_many([p for parts in parts_of for p in parts], redact=True) if batch else None
        with store.lock, transaction(store.conn):  # claims, memories and offset commit together
            keep: list[int] = []  # the prepared items this run stores, in order
            retractions: list[tuple[Turn, int]] = []  # each with the index of its first item
            claimed: list[tuple[str, int, int]] = []  # each claimed turn's uuid, first item and number of items
            position = 0  # the turn's first item among the prepared ones
            for (turn, _), parts in zip(batch, parts_of):
                if ledger.claim_message(store, turn.uuid, session_id, [p["id"] for p in parts]):
                    if turn.retracts:
                        retractions.append((turn, len(keep)))
                    claimed.append((turn.uuid, len(keep), len(parts)))
                    keep.extend(range(position, position + len(parts)))
                    stored_messages += 1
                    dumps_cut += turn.cut is not None
                else:
                    known.add(turn.uuid)  # another run stored it since it was looked up
                position += len(parts)
            if keep and prepared is not None:  # dedup on, as docs/dedup.md says: a repeat returns the stored one
                results = store.store_many_checked(prepared.subset(keep), dedup=True, redact=True)
                deduped += sum(1 for r in results if r["deduped"])
                stored_memories += sum(1 for r in results if not r["deduped"])
                for message_uuid, first, count in claimed:  # claimed with the ids made; a deduped part has another
                    held = results[first:first + count]
                    if any(r["deduped"] for r in held):
                        ledger.set_claimed_memories(store, message_uuid, [r["id"] for r in held])
                for turn, first in retractions:  # after the batch's turns exist: a retraction may follow its plan
                    retracted += link_retraction(store, session_id, turn.uuid, turn.role, results[first]["id"],
                                                 not_linked)
            ledger.set_transcript_offset(store, session_id, transcript_path, batch_to,
                                         read.restarted and index == 0)
    return {"stored_messages": stored_messages, "stored_memories": stored_memories,
            "deduped": deduped, "retracted": retracted, "retractions_not_linked": not_linked[:10],
            "dumps_cut": dumps_cut, "already_captured": len(known), "lines_read": read.lines, "read_from": read.start,
            "read_to": done_to, "more_to_read": more, "skipped": dict(sorted(skipped.items())),
            **({"rules_notes": list(rules.notes)} if rules.notes else {})}
