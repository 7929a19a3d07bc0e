"""``answer_hook``: one hook event in, the client's answer out (the one entry point).

The CLI (``localmem hook EVENT``) and the server's hook route both call it
with the parsed stdin JSON. ``SessionStart`` and ``UserPromptSubmit`` answer
with Claude Code's ``hookSpecificOutput.additionalContext`` (a recall block)
or nothing; ``Stop``, ``PreCompact`` and ``SessionEnd`` capture the
transcript and answer nothing (those events do not take ``additionalContext``).
``answer_hook_with_report`` also says what was done, for a log or stderr.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from ..errors import ValidationError
from ..timeparse import format_timestamp
from . import ledger
from .capture import capture, clean_text
from .inject import build_block, estimate_tokens, excluded_reason, relevance_of
from .content_free import note_skipped, nothing_to_look_up, prompt_prose
from .event_names import EVENTS, INJECT_EVENTS
from .noise_rules import NoiseRules, load_rules
from .project import ProjectNames, project_names
from .scope import ProjectScope, resolve, session_project, some_project_tags
from .message_shape import is_bare_question, is_courtesy
from .selection import (ALREADY_INJECTED, CHIT_CHAT, KEPT, OVER_BUDGET, OVER_SESSION_START, Candidate, StandOut,
                        choose_injectable, injection_floor)
from .project import PROJECT_FILE, capture_allowed
from .settings import HookSettings
from .transcript import check_transcript_path

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["answer_hook", "answer_hook_with_report", "HookAnswer", "HookSettings", "EVENTS"]

CANDIDATES = 20  # recall's answer a prompt's notes are chosen from: this many, or twice the cap
MAX_RECALL = 50
SESSION_START_POOL = 200  # rows session start looks through for notes that are not chit-chat
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
    names = project_names(cwd, settings.project)
    unknown = False  # the folder is gone and nothing says which project it was, or whether it allows capture
    if cwd and not names.exists and not settings.project:  # deleted while the session ran
        earlier = session_project(store, session_id)  # the project its earlier turns were captured in
        if earlier:
            names = ProjectNames(names.root, ((earlier, f"this session's earlier captures ({cwd} no longer exists)",
                                               earlier),), True, names.found, False)
        unknown = earlier is None
    project = names.primary
    if event in INJECT_EVENTS:
        if not settings.inject or settings.token_budget == 0:
            return HookAnswer(None, {"event": event, "injected": 0, "reason": "injection is turned off"})
        return _inject(store, event, payload, session_id, names, settings)
    if not settings.capture:
        return HookAnswer(None, {"event": event, "captured": 0, "reason": "capture is turned off"})
    if unknown:
        return HookAnswer(None, {"event": event, "captured": 0, "reason": (
            f"not captured: the folder {cwd} no longer exists and this session captured nothing before, so "
            f"neither its project nor its {PROJECT_FILE} (which may turn capture off) can be read")})
    if cwd and not capture_allowed(cwd):
        return HookAnswer(None, {"event": event, "captured": 0,
                                 "reason": f"capture is turned off for this project ({PROJECT_FILE})"})
    if project is None:  # untagged turns would be memories tied to no project: recalled in every project
        where = f"the folder {names.root} has no name to use" if names.root else "the payload has no 'cwd'"
        return HookAnswer(None, {"event": event, "captured": 0, "reason": (
            f"not captured: no project ({where}), and turns stored without one would be recalled in every "
            "project; name one with LOCALMEM_HOOK_PROJECT or a .localmem.json file")})
    path = check_transcript_path(payload.get("transcript_path"))
    rules = load_rules(settings.rules_path)
    report = capture(store, session_id, path, project, names.root, settings, rules)
    return HookAnswer(None, {"event": event, "project": project, **report,
                             "explain": [_project_line(names) + f"; new notes are tagged project:{project}"]})


def _session_id(payload: Mapping[str, Any]) -> str:
    value = payload.get("session_id")
    if not isinstance(value, str) or not _SESSION_ID.fullmatch(value):
        raise ValidationError("'session_id' must be 1-128 characters of letters, digits, '.', '_' or '-'")
    return value


def _cwd(payload: Mapping[str, Any]) -> str | None:
    value = payload.get("cwd")
    if value is None:
        return None
    problem = ("a string" if not isinstance(value, str) else "without NUL" if "\x00" in value
               else f"at most {MAX_CWD} characters" if len(value) > MAX_CWD
               else "an absolute path" if not value.startswith("/") else None)
    if problem is not None:
        shown = f", got {value[:80]!r}" if problem == "an absolute path" else ""
        raise ValidationError(f"'cwd' must be {problem}{shown}")
    return value


def _inject(store: "MemoryStore", event: str, payload: Mapping[str, Any], session_id: str,
            names: ProjectNames, settings: HookSettings) -> HookAnswer:
    rules = load_rules(settings.rules_path)
    prose = None  # what was cut from a prompt that pastes a log around its question
    if event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        if not isinstance(prompt, str):
            raise ValidationError("'prompt' must be a string for UserPromptSubmit")
        query, prose = prompt_prose(prompt, rules)  # a pasted log's question, not the log's start
        query, _ = clean_text(query)  # a NUL or lone surrogate would be refused
        skip = "empty prompt" if not query else nothing_to_look_up(query, rules)
        if skip:  # decided before recall or the scope is asked: the cheapest answer
            return HookAnswer(None, {"event": event, "project": names.primary, "injected": 0, "reason": skip})
    with store.lock:  # the scope's reads share the store's one connection with other threads' calls
        scope = resolve(store, names)
        explain = [_project_line(names), _scope_line(store, scope, names.root)]
    report: dict[str, Any] = {"event": event, "project": names.primary, "scope": scope.describe()}
    if prose:
        explain.append(prose)
    if event == "SessionStart":
        if payload.get("source") == "compact" and not store.read_only:
            with store.lock:
                ledger.forget_injected(store, session_id)  # the compacted context lost the old blocks
        candidates = _session_start_candidates(store, scope, session_id, settings, rules)
        heading = f"Notes from earlier sessions in project {names.primary}, most important first:"
        max_notes = settings.session_start_max
    else:
        floor = injection_floor(settings.relevance_floor, store.config)
        rule = StandOut(floor, settings.standout_lead, settings.standout_close, settings.max_memories,
                        settings.standout_order, settings.note_floor, settings.standout_margin)
        limit = min(MAX_RECALL, max(CANDIDATES, 2 * settings.max_memories))
        candidates = _prompt_candidates(store, query, scope, session_id, limit)
        # This session's own turns are out; chit-chat and code/log-shaped notes too, read where they decide.
        thresholds = choose_injectable(candidates, rule,
                                       lambda c: note_skipped(str(c.memory.get("content", "")), rules))
        candidates.sort(key=lambda c: -c.relevance)
        report.update(relevance_floor=floor, thresholds=thresholds,
                      relevance={c.memory_id: round(c.relevance, 4) for c in candidates})
        explain.append(_thresholds_line(thresholds, rule))
        heading = "Notes that may bear on this prompt" + (f" (project {names.primary})" if names.primary else "") + ":"
        max_notes = settings.max_memories
    kept = [c for c in candidates if c.reason == KEPT]
    with store.lock:
        seen = ledger.already_injected(store, session_id, [c.memory_id for c in kept])
        for candidate in kept:
            if candidate.memory_id in seen:
                candidate.reason = ALREADY_INJECTED
        kept = [c for c in kept if c.reason == KEPT]
        block, ids = build_block([c.memory for c in kept], heading, settings.token_budget, max_notes)
        for candidate in kept:
            if candidate.memory_id not in ids:
                candidate.reason = OVER_BUDGET
        report["candidates"] = [c.explain() for c in candidates]
        explain += [_candidate_line(c, event, e["preview"]) for c, e in zip(candidates, report["candidates"])]
        report["explain"] = explain
        if block is None:
            reason = ("nothing stands out above the floor" if event == "UserPromptSubmit"
                      else "no current note of the project to lead with")
            if seen:
                reason += f"; {len(seen)} already injected this session"
            return HookAnswer(None, {**report, "injected": 0, "already_injected": len(seen), "reason": reason})
        if store.read_only:
            report["note"] = "the store is read-only: the ledger is not kept, so these may be injected again"
        else:
            ledger.record_injected(store, session_id, ids, prune=event == "SessionStart")
    tokens = estimate_tokens(block)
    report["explain"].append(f"injected {len(ids)} note(s), {tokens} tokens (estimated)")
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": block}}
    return HookAnswer(output, {**report, "injected": len(ids), "already_injected": len(seen), "memory_ids": ids,
                               "tokens": tokens})


def _prompt_candidates(store: "MemoryStore", query: str, scope: ProjectScope, session_id: str,
                       limit: int) -> list[Candidate]:
    """Recall's answer over the project's tags and over memories tied to no project, merged.

    This session's own turns are asked too (so the pool is what recall sees) and marked
    ``OWN_TURN``: they are already in the context.
    """
    scopes: list[dict[str, Any]] = [{"tags": scope.tags, "tag_match": "exact"}] if scope.tags else []
    with store.lock:
        if ledger.has_unscoped_memories(store):  # memories tied to no project apply everywhere
            scopes.append({"exclude_tags": ["project"]})
    found: dict[str, Candidate] = {}
    for params in scopes:
        for rank, result in enumerate(store.recall(query, limit=limit, **params).get("results", []), 1):
            relevance = relevance_of(result)
            if result["id"] in found and found[result["id"]].relevance >= relevance:
                continue
            memory = result["memory"]
            inputs = (result.get("score_components") or {}).get("relevance_inputs")
            score = result.get("score")
            learned = (result.get("score_components") or {}).get("learned")  # the learned ranking's, for the gate
            found[result["id"]] = Candidate(result["id"], relevance, memory, excluded_reason(memory, session_id) or "",
                                            inputs if isinstance(inputs, dict) else None, rank,
                                            float(score) if isinstance(score, (int, float)) else None,
                                            float(learned) if isinstance(learned, (int, float)) else None)
    return list(found.values())


def _session_start_candidates(store: "MemoryStore", scope: ProjectScope, session_id: str,
                              settings: HookSettings, rules: NoiseRules) -> list[Candidate]:
    """The project's current notes, decisions, preferences and facts first (then importance,
    recency); courtesies and bare questions (capture's own rules, the user's rules file) are
    marked chit-chat; the first ``session_start_max`` others are kept."""
    if not scope.tags:
        return []
    with store.lock:  # read whole under the lock (a cursor left open would run beside other threads' calls)
        rows = store.conn.execute(store.sql["hook_session_start_notes"], {
            "tags": json.dumps(scope.tags), "session_tag": f"session:{session_id}".lower(),
            "now": format_timestamp(store.now()), "limit": SESSION_START_POOL}).fetchall()
    candidates = []
    kept = 0
    for memory_id, content, kind, importance, timestamp, metadata in rows:
        memory = {"id": memory_id, "content": content, "type": kind, "timestamp": timestamp,
                  "metadata": _json_object(metadata)}
        chit_chat = is_courtesy(content, rules) or is_bare_question(content, rules)
        reason = excluded_reason(memory, session_id) or (CHIT_CHAT if chit_chat else None)
        if reason is None:
            reason = KEPT if kept < settings.session_start_max else OVER_SESSION_START
            kept += reason == KEPT
        candidates.append(Candidate(memory_id, float(importance), memory, reason))
    return candidates


def _json_object(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _project_line(names: ProjectNames) -> str:
    """Which project the folder is and why (``hooks status`` says the same)."""
    if names.primary is None:
        return f"folder: {names.found}" if names.found else "folder: none given"
    return f"project {names.primary} from {names.names[0][1]}" + (f"; folder: {names.found}" if names.found else "")


def _scope_line(store: "MemoryStore", scope: ProjectScope, root: str | None) -> str:
    if scope.primary is None:
        why = f"the folder {root} has no name to use" if root else "no 'cwd' and no LOCALMEM_HOOK_PROJECT"
        return f"project: none ({why}): only notes tied to no project are asked"
    if not scope.matches:
        known = some_project_tags(store)
        return (f"project {scope.primary}: no current memory carries a matching project tag (tried project:{scope.primary} "
                f"and its forms); the store's project tags include: {', '.join(known) if known else 'none'}. "
                f"Name the project in .localmem.json or LOCALMEM_HOOK_PROJECT to use one of them")
    parts = [f"{tag} ({how})" for tag, how, _, _ in scope.matches]
    several = (f"recall asks all {len(parts)} tags, capture tags new notes project:{scope.primary}: "
               if len(parts) > 1 else "")  # first: -v cuts a line at 400 characters
    return (f"project {scope.primary}: " + several + "; ".join(parts)
            + " ('localmem hooks status' counts their notes)")


def _thresholds_line(thresholds: Mapping[str, float], rule: StandOut) -> str:
    if "best" not in thresholds:
        return f"no candidates (floor {rule.floor:.2f})"
    gate = ""
    if "gate" in thresholds:
        gate = (f" (whether: {1 - rule.blend:.2f} x the best relevance + {rule.blend:.2f} x the learned ranking's score"
                f" of recall's first, {thresholds['first_learned']:.3f}, = {thresholds['gate']:.3f} against "
                f"{thresholds['gate_floor']:.2f}: " + ("clears" if thresholds["gate"] >= thresholds["gate_floor"]
                                                       else "under") + ")")
    line = (f"floor {rule.floor:.2f}{gate}; best {thresholds['best']:.3f}, the rest's median "
            f"{thresholds['background']:.3f}"
            f" (the best must lead it by {rule.lead:.2f}); kept: relevance >= {thresholds['stand_out']:.3f}"
            f" (within {rule.close:.2f} of the best), at most {rule.cap}, "
            + ("recall's first" if rule.order == "recall" else "highest relevance first"))
    if rule.order == "recall" and rule.cap > 1:
        ratio = thresholds.get("second_over_first")
        line += (f"; a second only when recall's second scores >= {rule.margin:.2f} x its first ("
                 + (f"here {ratio:.2f}: " + ("close, up to " + str(rule.cap) if ratio >= rule.margin else "not close, 1")
                    if ratio is not None else "no second score: the margin does not apply") + ")")
    return line


def _candidate_line(candidate: Candidate, event: str, preview: str) -> str:
    if event == "SessionStart":
        kind = candidate.memory.get("type", "?")
        return f"  {candidate.reason:<32} {kind} importance {candidate.relevance:.2f}  {candidate.memory_id[:8]}  {preview}"
    # What the relevance rests on (recall's relevance_inputs), so a drop can be read, not guessed.
    inputs = ", ".join(f"{name} {value:.2f}" for name, value in (candidate.inputs or {}).items()
                       if isinstance(value, (int, float)))
    rank = f" rank {candidate.rank}" if candidate.rank is not None else ""
    rank += f" score {candidate.score:.3f}" if candidate.score is not None else ""
    return (f"  {candidate.reason:<32} relevance {candidate.relevance:.3f}{f' ({inputs})' if inputs else ''}{rank}  "
            f"{candidate.memory_id[:8]}  {preview}")
