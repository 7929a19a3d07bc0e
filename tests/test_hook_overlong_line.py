"""A transcript line longer than one capture run may read (a pasted 50 MB log as one JSONL line) is skipped
over several runs, never re-read from its start at every run: the turns after it are captured.

Driven as Claude Code drives it: ``localmem hook Stop`` in a subprocess, the payload on stdin.
"""

from __future__ import annotations

from pathlib import Path

from tests.claude_code_transcript import Transcript
from tests.hook_helpers import SESSION, payload, project_dir_path, run_hook
from tests.test_hook_capture import memories

# One run reads at most 64 KiB here; the overlong line is 200 KB, so it ends in the fourth run.
BOUNDS = {"LOCALMEM_HOOK_MAX_READ_BYTES": str(64 * 1024), "LOCALMEM_HOOK_MAX_LINE_BYTES": str(4 * 1024)}


def _transcript(tmp_path: Path) -> Path:
    path = tmp_path / f"{SESSION}.jsonl"
    chat = Transcript(path, SESSION, str(project_dir_path(tmp_path)))
    chat.user("Before the paste: the orchid release train leaves every second Tuesday.")
    chat.user("Traceback (most recent call last):\n" + "  File \"/srv/app.py\", line 1, in main\n" * 5_000)
    chat.user("After the paste: orchid tags are signed with the release GPG key, never a personal one.")
    return path


def test_a_line_longer_than_one_run_reads_is_passed_over_in_later_runs(tmp_path):
    db, transcript = tmp_path / "m.db", _transcript(tmp_path)
    assert transcript.stat().st_size > 3 * 64 * 1024
    errors = []
    for _ in range(6):
        _, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript), LOCALMEM_HOOK_VERBOSE="1", **BOUNDS)
        errors.append(err)
    texts = [m["content"] for m in memories(db)]
    assert any(t.startswith("Before the paste") for t in texts)
    assert any(t.startswith("After the paste") for t in texts), errors[-1]
    assert not any("Traceback" in t for t in texts)
    assert "line_too_long 1" in "".join(errors)  # -v says the line was skipped


def test_the_overlong_line_is_not_read_again_once_passed(tmp_path):
    db, transcript = tmp_path / "m.db", _transcript(tmp_path)
    for _ in range(6):
        run_hook(db, "Stop", payload("stop", tmp_path, transcript), **BOUNDS)
    Transcript(transcript, SESSION, str(project_dir_path(tmp_path))).user(
        "A later turn: the orchid changelog is written by the person who merges.")
    _, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript), LOCALMEM_HOOK_VERBOSE="1", **BOUNDS)
    assert "1 message(s) stored" in err and "line_too_long" not in err and "more of the transcript" not in err
