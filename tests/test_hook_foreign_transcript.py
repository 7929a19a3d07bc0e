"""A transcript path naming another user's file (a world-readable transcript on a shared machine, or /etc/passwd)
is not read: capture stores nothing of it and says why.

Driven as Claude Code drives it: ``localmem hook Stop`` in a subprocess, the payload on stdin.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.claude_code_transcript import Transcript
from tests.hook_helpers import SESSION, payload, project_dir_path, run_hook
from tests.test_hook_capture import memories

NOBODY = 65534


def _foreign_transcript(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        return Path("/etc/passwd")  # root's, readable by everyone
    path = tmp_path / f"{SESSION}.jsonl"
    Transcript(path, SESSION, str(project_dir_path(tmp_path))).user(
        "Another user's turn: the payroll export runs on the first Monday of each month.")
    os.chmod(path, 0o644)
    os.chown(path, NOBODY, NOBODY)
    return path


def test_another_users_transcript_is_not_read(tmp_path):
    db, transcript = tmp_path / "m.db", _foreign_transcript(tmp_path)
    assert transcript.stat().st_uid != os.geteuid()
    _, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript), LOCALMEM_HOOK_VERBOSE="1")
    assert memories(db) == []
    assert "belongs to another user" in err
