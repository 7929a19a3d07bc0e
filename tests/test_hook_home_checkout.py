"""A checkout at the home folder (a dotfiles repository: ``~/.git``) is not every folder's project.

The nearest ``.git`` names a folder's project; with ``~/.git`` every folder under home that is not a
checkout of its own would be one project, and notes from one would be injected in all the others.
Driven as Claude Code drives it: ``localmem hook EVENT`` in a subprocess, the payload on stdin.
"""

from __future__ import annotations

import json
from pathlib import Path

from localmem.hooks.project import project_names
from tests.claude_code_transcript import Transcript
from tests.hook_helpers import SESSION, run_hook
from tests.hook_layouts import capture, checkout, project_tags, prompt, status
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


NOTES_TURN = "My reading list for the winter holds three books on Byzantine history and one on sourdough."
API_TURN = "The api service rate limit is 300 requests a minute per token, set in gateway.yaml."
SCRATCH_TURN = "The scratch experiment compares three shuffle seeds for the flaky integration tests."
HOME_TURN = "My dotfiles keep the zsh prompt in .zshrc and the git aliases in .gitconfig."


def _dotfiles_home(tmp_path: Path) -> Path:
    """The brief's layout: a dotfiles checkout at $HOME; ~/notes (no checkout), ~/code/api (its own), ~/code/scratch."""
    home = tmp_path / "me"
    checkout(home, "git@github.com:me/dotfiles.git")
    (home / "notes").mkdir()
    checkout(home / "code" / "api", "git@github.com:acme/api.git")
    (home / "code" / "scratch").mkdir(parents=True)
    return home


def test_each_folder_under_a_dotfiles_home_keeps_its_own_notes(tmp_path):
    home = _dotfiles_home(tmp_path)
    db = tmp_path / "m.db"
    folders = {"notes": home / "notes", "api": home / "code" / "api", "scratch": home / "code" / "scratch",
               "me": home}
    turns = {"notes": NOTES_TURN, "api": API_TURN, "scratch": SCRATCH_TURN, "me": HOME_TURN}
    for index, (name, folder) in enumerate(folders.items()):
        capture(db, home, folder, turns[name], f"session-{index}")
    assert {m["content"]: project_tags(m) for m in memories(db)} == {
        turns[name]: [f"project:{name}"] for name in folders}
    names = list(folders)
    for index, name in enumerate(names):  # each folder is injected its own note, not the next folder's
        block, err = prompt(db, home, folders[name], turns[name])
        assert turns[name] in block, (name, err)
        other = names[(index + 1) % len(names)]
        block, err = prompt(db, home, folders[name], turns[other])
        assert turns[other] not in block, (name, other, err)


def test_status_and_verbose_say_a_home_checkout_was_ignored_and_why(tmp_path):
    home = _dotfiles_home(tmp_path)
    db = tmp_path / "m.db"
    err = capture(db, home, home / "code" / "scratch", SCRATCH_TURN, "session-1")
    assert "project scratch from the folder name of" in err and "home folder's checkout" in err, err
    assert "ignored" in err and "new notes are tagged project:scratch" in err, err
    text = status(db, home, home / "notes")
    assert "is project notes" in text and f"the home folder's checkout {home} ignored" in text, text
    assert "is project api" in status(db, home, home / "code" / "api")
    at_home = status(db, home, home)
    assert "is project me" in at_home and "the nearest folder holding .git" in at_home and "ignored" not in at_home
    data = json.loads(status(db, home, home / "code" / "scratch", "--json"))
    assert data["project"] == "scratch" and "ignored" in data["found"], data
    _, err = prompt(db, home, home / "notes", SCRATCH_TURN)
    assert "project notes from the folder name of" in err and "ignored" in err, err


def test_a_home_reached_through_a_symlink_is_still_the_home_folder(tmp_path):
    """$HOME is a symlink (/home/me -> /data/me) and the session's cwd is the real path, as getcwd gives it."""
    real = _dotfiles_home(tmp_path)
    link = tmp_path / "home-link"
    link.symlink_to(real, target_is_directory=True)
    db = tmp_path / "m.db"
    capture(db, link, real / "notes", NOTES_TURN, "session-1")
    capture(db, link, real / "code" / "scratch", SCRATCH_TURN, "session-2")
    assert {m["content"]: project_tags(m) for m in memories(db)} == {
        NOTES_TURN: ["project:notes"], SCRATCH_TURN: ["project:scratch"]}
    (real / ".localmem.json").write_text('{"capture": false}', "utf-8")  # the home checkout's switch still covers
    capture(db, link, real / "code" / "scratch", API_TURN, "session-3")
    assert API_TURN not in [m["content"] for m in memories(db)]
