"""A checkout at the home folder (a dotfiles repository: ``~/.git``) is not every folder's project.

The nearest ``.git`` names a folder's project; with ``~/.git`` every folder under home that is not a
checkout of its own would be one project, and notes from one would be injected in all the others.
Driven as Claude Code drives it: ``localmem hook EVENT`` in a subprocess, the payload on stdin.
"""

from __future__ import annotations

from pathlib import Path

from localmem.hooks.project import project_names
from tests.claude_code_transcript import Transcript
from tests.hook_helpers import SESSION, run_hook
from tests.test_hook_capture import memories

TURN = "The billing reconciliation job must run after the ledger export finishes each night."


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".git").mkdir(parents=True)
    for folder in ("notes/billing", "scratch/garden", "code/api/src"):
        (home / folder).mkdir(parents=True)
    (home / "code" / "api" / ".git").mkdir()
    return home


def test_folders_under_a_home_checkout_are_named_for_themselves(tmp_path, monkeypatch):
    home = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    assert project_names(str(home / "notes" / "billing")).primary == "billing"
    assert project_names(str(home / "scratch" / "garden")).primary == "garden"
    assert project_names(str(home / "code" / "api" / "src")).primary == "api"  # a checkout of its own still counts
    assert project_names(str(home)).primary == "home"  # home itself is the dotfiles checkout


def test_a_note_captured_in_one_folder_under_a_home_checkout_is_not_injected_in_another(tmp_path):
    home = _home(tmp_path)
    db = tmp_path / "m.db"
    billing, garden = home / "notes" / "billing", home / "scratch" / "garden"
    transcript = tmp_path / f"{SESSION}.jsonl"
    Transcript(transcript, SESSION, str(billing)).user(TURN)
    run_hook(db, "Stop", {"session_id": SESSION, "cwd": str(billing), "transcript_path": str(transcript)},
             HOME=str(home))
    stored = memories(db)
    assert stored and all("project:billing" in m["tags"] for m in stored), stored
    prompt = {"session_id": "another-session", "prompt": "when does the billing reconciliation job run?"}
    answer, _ = run_hook(db, "UserPromptSubmit", {**prompt, "cwd": str(garden)}, HOME=str(home),
                         LOCALMEM_HOOK_RELEVANCE_FLOOR="0.3")
    assert answer is None
    answer, _ = run_hook(db, "UserPromptSubmit", {**prompt, "cwd": str(billing)}, HOME=str(home),
                         LOCALMEM_HOOK_RELEVANCE_FLOOR="0.3")
    assert answer is not None and "ledger export" in str(answer)


def test_a_home_checkouts_capture_switch_still_covers_the_folders_below_home(tmp_path):
    home = _home(tmp_path)
    (home / ".localmem.json").write_text('{"capture": false}', "utf-8")
    db = tmp_path / "m.db"
    billing = home / "notes" / "billing"
    transcript = tmp_path / f"{SESSION}.jsonl"
    Transcript(transcript, SESSION, str(billing)).user(TURN)
    _, err = run_hook(db, "Stop", {"session_id": SESSION, "cwd": str(billing), "transcript_path": str(transcript)},
                      HOME=str(home), LOCALMEM_HOOK_VERBOSE="1")
    assert memories(db) == [], err
