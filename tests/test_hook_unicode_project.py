"""A project folder named in another script than Latin ("数据分析", "проект-1", "café" as macOS writes it): its name
keeps its letters, so the project is scoped by its own name, not by what is left of it in ASCII.

Driven as Claude Code drives it: ``localmem hook EVENT`` in a subprocess, the payload on stdin.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from tests.claude_code_transcript import Transcript
from tests.hook_helpers import SESSION, project_dir, run_hook
from tests.test_hook_capture import memories

TURN = "The nightly export must finish before the reconciliation job starts at 03:00."


def _capture(tmp_path: Path, db: Path, folder: str) -> None:
    root = project_dir(tmp_path, folder)
    path = tmp_path / f"{SESSION}.jsonl"
    Transcript(path, SESSION, str(root)).user(TURN)
    run_hook(db, "Stop", {"session_id": SESSION, "cwd": str(root), "transcript_path": str(path)})


def test_a_folder_in_another_script_is_a_project_of_its_own_name(tmp_path):
    db = tmp_path / "m.db"
    _capture(tmp_path, db, "数据分析")
    assert [t for m in memories(db) for t in m["tags"] if t.startswith("project:")] == ["project:数据分析"]


def test_two_folders_that_differ_only_outside_ascii_are_two_projects(tmp_path):
    db = tmp_path / "m.db"
    _capture(tmp_path, db, "проект-1")
    other = project_dir(tmp_path, "отчёт-1")
    answer, err = run_hook(db, "UserPromptSubmit", {"session_id": "another", "cwd": str(other), "prompt": TURN},
                           LOCALMEM_HOOK_RELEVANCE_FLOOR="0.3", LOCALMEM_HOOK_VERBOSE="1")
    assert answer is None, err


def test_a_folder_name_in_decomposed_form_is_the_same_project(tmp_path):
    db = tmp_path / "m.db"
    _capture(tmp_path, db, unicodedata.normalize("NFD", "café-api"))
    assert [t for m in memories(db) for t in m["tags"] if t.startswith("project:")] == ["project:café-api"]
