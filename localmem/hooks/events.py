"""``answer_hook``: one hook event in, the client's answer out (the one entry point).

The CLI (``localmem hook EVENT``) and the server's hook route both call it
with the parsed stdin JSON. ``SessionStart`` and ``UserPromptSubmit`` answer
with Claude Code's ``hookSpecificOutput.additionalContext`` (a recall block)
or nothing; ``Stop``, ``PreCompact`` and ``SessionEnd`` capture the
transcript and answer nothing (those events do not take ``additionalContext``).
``answer_hook_with_report`` also says what was done, for a log or stderr.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ValidationError
from . import ledger
from .capture import capture, clean_text
from ..recall.relevance_model import relevance_floor
from .inject import build_block, passes_floor, relevance_of
from .noise_rules import load_rules
from .project import PROJECT_FILE, capture_allowed, project_name, project_root, project_tag
from .settings import HookSettings
from .transcript import check_transcript_path

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["answer_hook", "answer_hook_with_report", "HookAnswer", "HookSettings", "EVENTS"]

INJECT_EVENTS = ("SessionStart", "UserPromptSubmit")
CAPTURE_EVENTS = ("Stop", "SubagentStop", "PreCompact", "SessionEnd")
EVENTS = INJECT_EVENTS + CAPTURE_EVENTS
MAX_QUERY_CHARS = 1000  # a pasted file as the prompt: its start is what recall is asked
MAX_RECALL = 50
_SESSION_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")
MAX_CWD = 4096


@dataclass
class HookAnswer:
    """``output``: the JSON object to print on stdout, or None for nothing; ``report``: what was done."""
    output: dict[str, Any] | None
    report: dict[str, Any] = field(default_factory=dict)


def answer_hook(store: "MemoryStore", event: str, payload: Mapping[str, Any],
                settings: HookSettings) -> dict[str, Any] | None:
    """The JSON object to print for ``event`` (Claude Code's format), or None to print nothing.

    ``ValidationError`` (naming the field) for an unknown event or a payload
    missing what the event needs; nothing is written then. ``event`` decides
    what is done; a payload's differing ``hook_event_name`` is noted in the report.
    """
    return answer_hook_with_report(store, event, payload, settings).output


def answer_hook_with_report(store: "MemoryStore", event: str, payload: Mapping[str, Any],
                            settings: HookSettings) -> HookAnswer:
    if event not in EVENTS:
        raise ValidationError(f"Unknown hook event {event!r}; known: {', '.join(EVENTS)}")
    if not isinstance(payload, Mapping):
        raise ValidationError("The hook payload must be a JSON object")
    answer = _answer(store, event, payload, settings)
    named = payload.get("hook_event_name")
    if named is not None and named != event:
        answer.report["note"] = f"the payload's hook_event_name is {str(named)[:64]!r}; answered as {event!r}"
    return answer


def _answer(store: "MemoryStore", event: str, payload: Mapping[str, Any], settings: HookSettings) -> HookAnswer:
    session_id = _session_id(payload)
    cwd = _cwd(payload)
    project = project_name(cwd, settings.project)
    if event in INJECT_EVENTS:
        if not settings.inject or settings.token_budget == 0:
            return HookAnswer(None, {"event": event, "injected": 0, "reason": "injection is turned off"})
        return _inject(store, event, payload, session_id, project, settings)
    if not settings.capture:
        return HookAnswer(None, {"event": event, "captured": 0, "reason": "capture is turned off"})
    if cwd and not capture_allowed(cwd):
        return HookAnswer(None, {"event": event, "captured": 0,
                                 "reason": f"capture is turned off for this project ({PROJECT_FILE})"})
    path = check_transcript_path(payload.get("transcript_path"))
    rules = load_rules(settings.rules_path)
    root = project_root(cwd) if cwd else None
    report = capture(store, session_id, path, project, root, settings, rules)
    return HookAnswer(None, {"event": event, "project": project, **report})


def _session_id(payload: Mapping[str, Any]) -> str:
    value = payload.get("session_id")
    if not isinstance(value, str) or not _SESSION_ID.fullmatch(value):
        raise ValidationError("'session_id' must be 1-128 characters of letters, digits, '.', '_' or '-'")
    return value


def _cwd(payload: Mapping[str, Any]) -> str | None:
    value = payload.get("cwd")
    if value is None:
        return None
    if not isinstance(value, str) or "\x00" in value or len(value) > MAX_CWD or not value.startswith("/"):
        raise ValidationError("'cwd' must be an absolute path")
    return value


def _inject(store: "MemoryStore", event: str, payload: Mapping[str, Any], session_id: str,
            project: str | None, settings: HookSettings) -> HookAnswer:
    limit = min(MAX_RECALL, settings.max_memories * 3)
    report: dict[str, Any] = {"event": event, "project": project}
    if event == "SessionStart":
        if project is None:
            return HookAnswer(None, {**report, "injected": 0, "reason": "no project scope (no 'cwd')"})
        if payload.get("source") == "compact" and not store.read_only:
            with store.lock:
                ledger.forget_injected(store, session_id)  # the compacted context lost the old blocks
        response = store.recall(None, tags=[project_tag(project)], tag_match="exact",
                                exclude_tags=[f"session:{session_id}"], limit=limit)
        chosen = [r["memory"] for r in response.get("results", [])]
        heading = f"Notes from earlier sessions in project {project} (oldest first):"
    else:
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            raise ValidationError("'prompt' must be a string for UserPromptSubmit")
        query, _ = clean_text(prompt.strip()[:MAX_QUERY_CHARS])  # a NUL or lone surrogate would be refused
        if not query:
            return HookAnswer(None, {**report, "injected": 0, "reason": "empty prompt"})
        scored: dict[str, tuple[float, dict[str, Any]]] = {}
        floor = settings.relevance_floor if settings.relevance_floor is not None else relevance_floor(store.config)
        report["relevance_floor"] = floor
        scopes: list[dict[str, Any]] = [{"tags": [project_tag(project)], "tag_match": "exact"}] if project else []
        with store.lock:
            if ledger.has_unscoped_memories(store):  # memories tied to no project apply everywhere
                scopes.append({"exclude_tags": ["project"]})
        for scope in scopes:
            excluded = scope.pop("exclude_tags", []) + [f"session:{session_id}"]
            response = store.recall(query, exclude_tags=excluded, limit=limit, **scope)
            for result in response.get("results", []):
                if passes_floor(result, floor):
                    relevance = relevance_of(result)
                    if result["id"] not in scored or scored[result["id"]][0] < relevance:
                        scored[result["id"]] = (relevance, result["memory"])
        chosen = [memory for _, memory in sorted(scored.values(), key=lambda pair: -pair[0])]
        report["above_floor"] = len(chosen)
        report["relevance"] = {memory_id: round(value, 4) for memory_id, (value, _) in scored.items()}
        heading = "Notes that may bear on this prompt" + (f" (project {project})" if project else "") + ":"
    with store.lock:
        seen = ledger.already_injected(store, session_id, [m["id"] for m in chosen])
        chosen = [m for m in chosen if m["id"] not in seen]
        block, ids = build_block(chosen, heading, settings.token_budget, settings.max_memories,
                                 chronological=event == "SessionStart")
        if block is None:
            return HookAnswer(None, {**report, "injected": 0, "already_injected": len(seen),
                                     "reason": "nothing new cleared the floor and fit the budget"})
        if store.read_only:
            report["note"] = "the store is read-only: the ledger is not kept, so these may be injected again"
        else:
            ledger.record_injected(store, session_id, ids, prune=event == "SessionStart")
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}
    return HookAnswer(output, {**report, "injected": len(ids), "already_injected": len(seen), "memory_ids": ids})
