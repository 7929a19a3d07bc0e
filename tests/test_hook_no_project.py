"""A session whose folder names no project (cwd ``/``, or no cwd): capture stores nothing, and says why.

Turns captured without a ``project:`` tag would be memories tied to no project, which every
project's prompts draw on: a chat from ``/`` would be recalled in every other project.
Driven as Claude Code drives it: ``localmem hook EVENT`` in a subprocess, the payload on stdin.
"""

from __future__ import annotations

from pathlib import Path

from tests.claude_code_transcript import Transcript
from tests.hook_helpers import SESSION, project_dir, run_hook
from tests.test_hook_capture import memories

TURN = "The billing reconciliation job must run after the ledger export finishes each night."


def _transcript(tmp_path: Path, cwd: str) -> Path:
    path = tmp_path / f"{SESSION}.jsonl"
    Transcript(path, SESSION, cwd).user(TURN)
    return path


def test_a_session_at_the_filesystem_root_is_not_captured_into_every_project(tmp_path):
    db = tmp_path / "m.db"
    transcript = _transcript(tmp_path, "/")
    _, err = run_hook(db, "Stop", {"session_id": SESSION, "cwd": "/", "transcript_path": str(transcript)},
                      LOCALMEM_HOOK_VERBOSE="1")
    assert memories(db) == [], err
    assert "no project" in err
    other = project_dir(tmp_path, "billing")
    answer, _ = run_hook(db, "UserPromptSubmit", {"session_id": "another-session", "cwd": str(other), "prompt": TURN},
                         LOCALMEM_HOOK_RELEVANCE_FLOOR="0.3")
    assert answer is None


def test_a_payload_without_cwd_is_not_captured_and_says_why(tmp_path):
    db = tmp_path / "m.db"
    transcript = _transcript(tmp_path, "/somewhere")
    _, err = run_hook(db, "Stop", {"session_id": SESSION, "transcript_path": str(transcript)},
                      LOCALMEM_HOOK_VERBOSE="1")
    assert memories(db) == [] and "no project" in err


def test_a_project_named_by_the_setting_is_captured_from_the_root(tmp_path):
    db = tmp_path / "m.db"
    transcript = _transcript(tmp_path, "/")
    run_hook(db, "Stop", {"session_id": SESSION, "cwd": "/", "transcript_path": str(transcript)},
             LOCALMEM_HOOK_PROJECT="ops")
    assert [m["tags"] for m in memories(db)] == [[f"session:{SESSION}", "source:claude-code", "project:ops"]]
