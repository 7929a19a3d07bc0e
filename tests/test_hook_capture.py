"""Capture at Stop / PreCompact / SessionEnd: a real-format transcript in, verbatim threaded turns stored once.

Driven as Claude Code drives it: ``localmem hook EVENT`` in a subprocess with
the recorded payload on stdin, the hash embedder and a temporary database.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from localmem import ConfigError, MemoryStore
from localmem.hooks.capture import split_parts
from localmem.hooks.events import answer_hook_with_report
from localmem.hooks.inject import CLOSE_MARKER, OPEN_MARKER
from localmem.hooks.noise_rules import DEFAULT_RULES, effective_rules, load_rules
from localmem.hooks.settings import HookSettings
from tests.hook_helpers import (SESSION, fixture_entries, hook_command, hook_env, payload, run_hook,
                                transcript_copy)

# The turns of fixtures/claude_code/transcript.jsonl worth keeping, by uuid.
KEPT = {
    "a1f0c2d4-0001-4e5f-9a7b-3c2d1e0f9a01": "user",
    "b2e1d3c5-0004-4f60-8b8c-4d3e2f1a0b04": "assistant",
    "b2e1d3c5-0010-4f60-8b8c-4d3e2f1a0b10": "assistant",
    "a1f0c2d4-0014-4e5f-9a7b-3c2d1e0f9a14": "user",
    "b2e1d3c5-0015-4f60-8b8c-4d3e2f1a0b15": "assistant",
}


def memories(db: Path) -> list[dict]:
    with MemoryStore(db, embedder="hash") as store:
        return store.list_memories(limit=200, sort="time_asc")["memories"]


def fixture_text(entry: dict) -> str:
    content = entry["message"]["content"]
    return content if isinstance(content, str) else "\n\n".join(b["text"] for b in content if b["type"] == "text")


def append(path: Path, *entries: dict | str | bytes) -> None:
    with open(path, "ab") as handle:
        for entry in entries:
            if isinstance(entry, dict):
                entry = json.dumps(entry)
            handle.write(entry if isinstance(entry, bytes) else entry.encode("utf-8", "surrogatepass"))
            handle.write(b"\n")


def user_line(uuid: str, text: str, **extra) -> dict:
    return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/x", "sessionId": SESSION,
            "version": "2.1.14", "type": "user", "message": {"role": "user", "content": text}, "uuid": uuid,
            "timestamp": "2026-11-28T10:00:00.000Z", **extra}


def test_stop_stores_each_kept_turn_verbatim_threaded_and_tagged(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    assert out is None, "Stop takes no additionalContext: the hook prints nothing"
    stored = memories(db)
    by_uuid = {e["uuid"]: e for e in fixture_entries() if "uuid" in e}
    assert sorted(m["metadata"]["message_uuid"] for m in stored) == sorted(KEPT)
    for memory in stored:
        entry = by_uuid[memory["metadata"]["message_uuid"]]
        assert memory["content"] == fixture_text(entry)  # verbatim
        assert memory["metadata"]["role"] == KEPT[entry["uuid"]]
        assert memory["metadata"]["session"] == SESSION  # the thread
        assert memory["timestamp"].startswith(entry["timestamp"][:19])  # the turn's time, not now
        assert set(memory["tags"]) >= {f"session:{SESSION}", "project:orchid", "source:claude-code"}
        assert memory["metadata"]["project_path"] == str(tmp_path / "orchid")  # the .git root above cwd


def test_capture_is_idempotent_across_runs_and_events(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    first = {m["id"] for m in memories(db)}
    for event, kind in (("Stop", "stop"), ("PreCompact", "pre_compact"), ("SessionEnd", "session_end")):
        run_hook(db, event, payload(kind, tmp_path, transcript))
    assert {m["id"] for m in memories(db)} == first and len(first) == len(KEPT)


def test_a_fresh_read_of_the_whole_file_stores_nothing_twice(tmp_path):
    """Even with the read offset lost (a replaced file), the captured ids keep it to one copy."""
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    with MemoryStore(db, embedder="hash") as store:
        store.conn.execute("DELETE FROM hook_transcripts")
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    assert len(memories(db)) == len(KEPT)


def test_two_hooks_at_once_store_each_turn_once(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    MemoryStore(db, embedder="hash").close()  # migrated once, so both start at the capture itself
    body = json.dumps(payload("stop", tmp_path, transcript))
    procs = [subprocess.Popen(hook_command(db, "Stop"), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=hook_env()) for _ in range(3)]
    for proc in procs:
        proc.stdin.write(body)
        proc.stdin.close()
    for proc in procs:
        assert proc.wait(timeout=120) == 0
        assert proc.stdout.read() == ""
        proc.stdout.close()
        proc.stderr.close()
    uuids = [m["metadata"]["message_uuid"] for m in memories(db)]
    assert sorted(uuids) == sorted(KEPT)


def test_only_appended_turns_are_read_and_stored_next_time(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    store = MemoryStore(db, embedder="hash")
    settings = HookSettings()
    first = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), settings).report
    append(transcript, user_line("a1f0c2d4-0016-4e5f-9a7b-3c2d1e0f9a16", "Next: move the cron to 11:00 UTC."))
    second = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), settings).report
    store.close()
    assert second["read_from"] == first["read_to"] and second["lines_read"] == 1
    assert second["stored_messages"] == 1
    assert len(memories(db)) == len(KEPT) + 1


def test_feedback_loop_guard_never_stores_localmem_blocks_or_its_own_tool_calls(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    # A user turn that carries an injected block around the user's own words (an older client's form).
    block = f"{OPEN_MARKER}\n- [2026-11-20, id 7e2d91aa] Blue-green deploys run on Fridays at 16:00.\n{CLOSE_MARKER}"
    append(transcript, user_line("a1f0c2d4-0017-4e5f-9a7b-3c2d1e0f9a17", f"{block}\nRoll back the canary if errors pass 2%."))
    append(transcript, user_line("a1f0c2d4-0018-4e5f-9a7b-3c2d1e0f9a18", block))  # nothing but a block
    store = MemoryStore(db, embedder="hash")
    report = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), HookSettings()).report
    store.close()
    assert report["skipped"]["localmem_tool_call"] == 1
    assert report["skipped"]["localmem_block_cut"] == 2
    stored = memories(db)
    text = "\n".join(m["content"] for m in stored)
    # The old note reached the transcript only through localmem (its block and its tool result).
    assert "Blue-green deploys run on Fridays at 16:00" not in text
    assert "localmem-recalled-notes" not in text and '"status": "success"' not in text
    assert any(m["content"] == "Roll back the canary if errors pass 2%." for m in stored)
    assert len(stored) == len(KEPT) + 1


def test_tool_noise_commands_and_code_dumps_are_skipped(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    store = MemoryStore(db, embedder="hash")
    report = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), HookSettings()).report
    store.close()
    text = "\n".join(m["content"] for m in memories(db))
    for noise in ("cron: '0 16", "canary.sh --step", "Total cost", "<command-name>", "Check the workflow file"):
        assert noise not in text
    assert report["skipped"]["tool_result"] == 2 and report["skipped"]["code_or_log"] == 1
    assert report["skipped"]["skip_pattern"] == 2 and report["skipped"]["flag:isMeta"] == 1


def test_hostile_lines_are_skipped_and_counted_without_losing_the_good_ones(tmp_path):
    db, transcript = tmp_path / "m.db", tmp_path / "hostile.jsonl"
    good = [f"c0ffee00-0000-4000-8000-00000000000{i}" for i in range(6)]
    append(transcript,
           user_line(good[0], "first good turn about the orchid release train"),
           json.dumps(user_line("ffff0000-0000-4000-8000-000000000001", "x" * 300_000)),  # over the line cap
           user_line(good[1], "second good turn after the huge line"),
           b'{"type": "user", "uuid": "ffff0000-0000-4000-8000-000000000002", "message": {"role": "user", "content": "raw NUL \x00 byte"}}',
           user_line(good[2], "escaped NUL \u0000 inside survives as a replacement character"),
           '{"type": "user", "uuid": "' + good[3] + '", "message": {"role": "user", "content": "lone surrogate \\ud800 here"}}',
           "[" * 200_000 + "]" * 200_000,  # nests far too deep (and is overlong)
           "[" * 5_000 + "]" * 5_000,  # nests too deep for the parser, within the line cap
           b"\xff\xfe not utf-8 at all",
           "42",
           "{not json",
           user_line(good[4], "third good turn after the junk"),
           user_line(good[5], "fourth good turn"))
    settings = HookSettings(max_line_bytes=64 * 1024)
    store = MemoryStore(db, embedder="hash")
    report = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), settings).report
    store.close()
    assert report["skipped"]["line_too_long"] == 2
    assert report["skipped"]["nested_too_deep"] == 1
    assert report["skipped"]["not_utf8"] == 1 and report["skipped"]["not_an_object"] == 1
    assert report["skipped"]["not_json"] == 2  # the raw NUL byte (JSON forbids it) and "{not json"
    by_uuid = {m["metadata"]["message_uuid"]: m for m in memories(db)}
    assert sorted(by_uuid) == sorted(good)
    assert by_uuid[good[2]]["content"] == "escaped NUL \ufffd inside survives as a replacement character"
    assert by_uuid[good[3]]["content"] == "lone surrogate \ufffd here"
    assert "sanitized" in by_uuid[good[3]]["metadata"]


def test_hostile_transcript_through_the_command(tmp_path):
    db, transcript = tmp_path / "m.db", tmp_path / "hostile.jsonl"
    append(transcript, "[" * 100_000, user_line("c0ffee00-0000-4000-8000-0000000000aa", "kept"),
           "\x00\x00\x00", user_line("c0ffee00-0000-4000-8000-0000000000bb", "also kept"))
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    assert out is None
    assert sorted(m["content"] for m in memories(db)) == ["also kept", "kept"]


def test_an_unfinished_last_line_waits_for_the_next_run(tmp_path):
    db, transcript = tmp_path / "m.db", tmp_path / "t.jsonl"
    line = json.dumps(user_line("c0ffee00-0000-4000-8000-0000000000cc", "written in two goes"))
    transcript.write_text(line[:40])
    store = MemoryStore(db, embedder="hash")
    first = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), HookSettings()).report
    assert first["stored_messages"] == 0 and first["read_to"] == 0 and first["skipped"] == {}
    with open(transcript, "a") as handle:
        handle.write(line[40:] + "\n")
    second = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), HookSettings()).report
    store.close()
    assert second["stored_messages"] == 1
    assert [m["content"] for m in memories(db)] == ["written in two goes"]


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory", "missing"])
def test_only_a_regular_file_is_read_as_the_transcript(tmp_path, kind):
    db, target = tmp_path / "m.db", tmp_path / "special"
    if kind == "fifo":
        os.mkfifo(target)  # opening it to read must not wait for a writer
    elif kind == "symlink":
        target.symlink_to(transcript_copy(tmp_path))
    elif kind == "directory":
        target.mkdir()
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, target))
    assert out is None and "transcript_path" in err
    assert memories(db) == []


def test_a_long_turn_is_stored_whole_in_ordered_parts(tmp_path):
    db, transcript = tmp_path / "m.db", tmp_path / "t.jsonl"
    paragraphs = [f"Paragraph {i}: " + " ".join(["the release train carries orchid builds to staging"] * 8)
                  for i in range(12)]
    text = "\n\n".join(paragraphs)
    append(transcript, user_line("c0ffee00-0000-4000-8000-0000000000dd", text))
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    stored = sorted(memories(db), key=lambda m: m["metadata"]["part"])
    assert len(stored) == len(split_parts(text)) > 1
    assert all(len(m["content"]) <= 2000 for m in stored)
    assert [m["metadata"]["part"] for m in stored] == list(range(1, len(stored) + 1))
    assert "\n\n".join(m["content"] for m in stored) == text


def test_a_rules_file_changes_what_is_captured_and_shows_where_it_came_from(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    rules = tmp_path / "rules.json"
    # A key given replaces its default whole: the default patterns are kept by listing them.
    rules.write_text(json.dumps({"roles": ["user"], "skip_patterns": [*DEFAULT_RULES["skip_patterns"], "staging"]}))
    run_hook(db, "Stop", payload("stop", tmp_path, transcript), LOCALMEM_HOOK_RULES_PATH=str(rules))
    assert [m["metadata"]["message_uuid"] for m in memories(db)] == ["a1f0c2d4-0001-4e5f-9a7b-3c2d1e0f9a01"]
    shown = effective_rules(str(rules))
    assert shown["source"] == str(rules) and shown["rules"]["roles"] == ["user"]
    assert shown["rules"]["max_chars"] == 12000  # left out of the file: the default
    assert effective_rules(None, {"XDG_CONFIG_HOME": str(tmp_path / "none")})["source"] == "built-in"


@pytest.mark.parametrize("content, named", [
    ({"max_chars": "many"}, "max_chars"), ({"skip_patterns": ["(unclosed"]}, "skip_patterns"),
    ({"rolse": ["user"]}, "rolse"), ({"roles": ["system"]}, "roles"), ([1, 2], "object"),
])
def test_a_bad_rules_file_is_refused_by_name_and_nothing_is_stored(tmp_path, content, named):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(content))
    with pytest.raises(ConfigError, match=named):
        load_rules(str(rules))
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript), LOCALMEM_HOOK_RULES_PATH=str(rules))
    assert out is None and named in err
    assert memories(db) == []


def test_capture_can_be_turned_off(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    run_hook(db, "Stop", payload("stop", tmp_path, transcript), LOCALMEM_HOOK_CAPTURE="off")
    assert memories(db) == []


def test_a_version_8_file_gains_the_hook_tables_and_keeps_its_memories(tmp_path):
    from localmem.storage.database import connect
    from localmem.storage.migrations import migrate, schema_version
    from localmem.storage.statements import Statements

    db = tmp_path / "v8.db"
    conn = connect(db)
    assert migrate(conn, Statements(), target=8) == 8
    conn.execute("INSERT INTO memories (id, content, summary, type, confidence, importance, tags, timestamp, "
                 "updated_at, last_accessed, t_valid, metadata) VALUES (?, 'Older note', 'Older note', 'Context', "
                 "0.5, 0.5, '[]', ?, ?, ?, ?, '{}')", ("11111111-2222-4333-8444-555555555555",
                                                       *["2026-11-01T00:00:00+00:00"] * 4))
    conn.close()
    with MemoryStore(db, embedder="hash") as store:
        assert schema_version(store.conn) >= 11
        assert store.get("11111111-2222-4333-8444-555555555555")["content"] == "Older note"
        tables = {r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"hook_injected", "hook_captured", "hook_transcripts"} <= tables
    transcript = transcript_copy(tmp_path)
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    assert len(memories(db)) == len(KEPT) + 1


def test_a_long_backlog_is_stored_in_bounded_batches_over_several_runs(tmp_path, monkeypatch):
    """A first capture of a long transcript holds the write lock one batch at a time and
    stops after a bound; the next run goes on from the last stored turn."""
    from localmem.hooks import capture as capture_module

    monkeypatch.setattr(capture_module, "BATCH_MESSAGES", 1)
    monkeypatch.setattr(capture_module, "MAX_MESSAGES", 2)
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    store = MemoryStore(db, embedder="hash")
    counts = []
    for _ in range(4):
        report = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), HookSettings()).report
        counts.append((report["stored_messages"], report["more_to_read"]))
    store.close()
    assert counts == [(2, True), (2, True), (1, False), (0, False)]
    assert sorted(m["metadata"]["message_uuid"] for m in memories(db)) == sorted(KEPT)


def test_a_run_labels_only_the_turns_it_can_store(tmp_path, monkeypatch):
    """A long transcript's turns are read and labelled (shape, redaction: most of a run's work)
    only as far as one run stores; the rest waits for the next run. Labelling all of a 32 MiB
    window first took a 73 MB transcript's Stop hook past its 20 s deadline on every run."""
    from localmem.hooks import capture as capture_module

    monkeypatch.setattr(capture_module, "BATCH_MESSAGES", 1)
    monkeypatch.setattr(capture_module, "MAX_MESSAGES", 2)
    labelled = []
    real_turn_of = capture_module.turn_of
    monkeypatch.setattr(capture_module, "turn_of",
                        lambda entry, *rest: labelled.append(entry) or real_turn_of(entry, *rest))
    db, transcript = tmp_path / "m.db", tmp_path / "long.jsonl"
    uuids = [f"e5000000-0000-4000-8000-{i:012d}" for i in range(40)]
    append(transcript, *(user_line(u, f"Statement {i}: the staging host is box-{i}.") for i, u in enumerate(uuids)))
    store = MemoryStore(db, embedder="hash")
    runs = []
    for _ in range(21):
        labelled.clear()
        report = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), HookSettings()).report
        runs.append((report["stored_messages"], report["more_to_read"], len(labelled)))
    store.close()
    assert runs[0] == (2, True, 3)  # two stored, a third read to know there is more
    assert all(labelled <= 3 for _, _, labelled in runs)
    assert runs[-1][:2] == (0, False)
    assert sorted(m["metadata"]["message_uuid"] for m in memories(db)) == uuids


def test_the_next_session_starts_with_the_last_ones_turns_and_never_stores_its_own_blocks(tmp_path):
    """A whole round: capture session A, start session B (A's turns injected), prompt in B, and
    B's transcript carrying the hook's real blocks (as context and pasted into a turn) captured."""
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    run_hook(db, "SessionEnd", payload("session_end", tmp_path, transcript))
    start, _ = run_hook(db, "SessionStart", payload("session_start", tmp_path, session_id="session-b"))
    block = start["hookSpecificOutput"]["additionalContext"]
    assert "orchid-staging-7" in block and "canary releases on Tuesdays" in block
    b_transcript = tmp_path / "session-b.jsonl"
    append(b_transcript,
           {"type": "attachment", "attachment": {"type": "hook_additional_context", "content": [block],
                                                 "hookName": "SessionStart", "hookEvent": "SessionStart"},
            "uuid": "d4000000-0000-4000-8000-000000000001", "timestamp": "2026-11-29T08:00:00.000Z"},
           user_line("d4000000-0000-4000-8000-000000000002", block, isMeta=True),
           user_line("d4000000-0000-4000-8000-000000000003", f"As you noted:\n{block}\nSo who approves access?"))
    run_hook(db, "Stop", payload("stop", tmp_path, b_transcript, session_id="session-b"))
    b_turns = [m for m in memories(db) if m["metadata"]["session"] == "session-b"]
    assert [m["content"] for m in b_turns] == ["As you noted:\n\nSo who approves access?"]
    assert len(memories(db)) == len(KEPT) + 1  # A's turns exist once: none came back through a block


def test_capture_stores_through_dedup_on_write(tmp_path):
    """The same words at the same moment of the same session (a client that logged a message
    twice under two ids) are one memory: capture writes with dedup on (docs/dedup.md)."""
    db, transcript = tmp_path / "m.db", tmp_path / "t.jsonl"
    text = "Remember that the orchid release train leaves every second Thursday."
    append(transcript, user_line("11111111-aaaa-4bbb-8ccc-000000000001", text),
           user_line("11111111-aaaa-4bbb-8ccc-000000000002", text))
    with MemoryStore(db, embedder="hash") as store:
        report = answer_hook_with_report(store, "Stop", payload("stop", tmp_path, transcript), HookSettings()).report
    assert (report["stored_messages"], report["stored_memories"], report["deduped"]) == (2, 1, 1)
    assert [m["content"] for m in memories(db)] == [text]
