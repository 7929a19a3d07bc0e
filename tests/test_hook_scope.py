"""The project scope finds the user's notes: tag forms, the git remote's name, the project file,
``hooks status``, and ``hook -v`` saying why nothing was found. Through the hook command as a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore
from localmem.errors import ValidationError
from localmem.hooks.project import MAX_FILE_BYTES, git_remote_repository, project_names
from localmem.hooks.scope import forms_of, words_of
from tests.hook_helpers import hook_env, run_hook

BILLING = "Invoices for the billing service are generated nightly at 02:00 UTC by the invoice-runner job."
PROMPT = "When are invoices generated for billing?"


def checkout(tmp_path: Path, name: str, remote: str | None = None) -> Path:
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    if remote:
        (root / ".git" / "config").write_text(
            '[core]\n\tbare = false\n[remote "upstream"]\n\turl = https://example.com/x/other.git\n'
            f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n', "utf-8")
    return root


def store_with(tmp_path: Path, tag: str, *extra: str) -> Path:
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store(BILLING, tags=[f"project:{tag}"], type="Decision")
        for text in extra:
            store.store(text, tags=[f"project:{tag}"])
    return db


def prompt_payload(cwd: Path, text: str = PROMPT, session: str = "s1") -> dict:
    return {"session_id": session, "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
            "hook_event_name": "UserPromptSubmit", "prompt": text}


def start_payload(cwd: Path, session: str = "s0") -> dict:
    return {"session_id": session, "transcript_path": str(cwd / "t.jsonl"), "cwd": str(cwd),
            "hook_event_name": "SessionStart", "source": "startup"}


def block_of(out: dict | None) -> str:
    assert out is not None
    return out["hookSpecificOutput"]["additionalContext"]


def test_names_are_split_the_way_people_write_them():
    assert words_of("BillingAPI") == ["billing", "api"]
    assert words_of("billing_api") == words_of("billing-api") == ["billing", "api"]
    tags = forms_of("billingapi", "BillingAPI")
    assert {"project:billing", "project:billing-api", "project:billing_api", "project:billingapi"} <= set(tags)
    assert "project:api" not in tags  # a trailing word alone is no match
    assert "project:db" not in forms_of("db-tools", "db-tools")  # too short a leading word


@pytest.mark.parametrize("folder", ["billing-api", "billing_api", "BillingAPI", "billing"])
def test_a_note_tagged_with_the_short_name_is_injected_in_every_form_of_the_folder(tmp_path, folder):
    db = store_with(tmp_path, "billing")
    root = checkout(tmp_path, folder)
    out, err = run_hook(db, "UserPromptSubmit", prompt_payload(root / "src"), LOCALMEM_HOOK_RELEVANCE_FLOOR="0.2")
    assert BILLING in block_of(out), err
    start, err = run_hook(db, "SessionStart", start_payload(root / "src"))
    assert BILLING in block_of(start), err


def test_the_git_remotes_repository_name_is_a_project_name(tmp_path):
    root = checkout(tmp_path, "checkout-2", remote="git@github.com:acme/billing-api.git")
    assert git_remote_repository(str(root)) == ("billing-api", "origin")
    db = store_with(tmp_path, "billing-api")
    out, err = run_hook(db, "SessionStart", start_payload(root))
    assert BILLING in block_of(out), err


def test_the_project_file_names_the_project(tmp_path):
    root = checkout(tmp_path, "scratch")
    (root / ".localmem.json").write_text(json.dumps({"project": "Billing"}), "utf-8")
    db = store_with(tmp_path, "billing")
    out, err = run_hook(db, "SessionStart", start_payload(root / "src"))
    assert BILLING in block_of(out), err
    names = project_names(str(root / "src"))
    assert names.primary == "billing" and names.explicit  # capture tags new notes project:billing too


@pytest.mark.parametrize("content, field", [
    ("{not json", "not valid JSON"), ('["billing"]', "JSON object"), ('{"project": ""}', "'project'"),
    ('{"project": 7}', "'project'"), ('{"project": "x", "aliases": []}', "aliases"),
])
def test_a_bad_project_file_is_named_and_nothing_is_injected(tmp_path, content, field):
    root = checkout(tmp_path, "billing")
    (root / ".localmem.json").write_text(content, "utf-8")
    with pytest.raises(ValidationError, match=field):
        project_names(str(root))
    db = store_with(tmp_path, "billing")
    out, err = run_hook(db, "SessionStart", start_payload(root))
    assert out is None and ".localmem.json" in err


def test_a_huge_project_file_is_not_read_whole(tmp_path):
    root = checkout(tmp_path, "billing")
    (root / ".localmem.json").write_text('{"project": "billing"' + " " * (MAX_FILE_BYTES + 10) + "}", "utf-8")
    with pytest.raises(ValidationError, match="over"):
        project_names(str(root))


def test_a_huge_git_config_is_read_by_its_start(tmp_path):
    root = checkout(tmp_path, "work", remote="https://example.com/acme/billing.git")
    with open(root / ".git" / "config", "a", encoding="utf-8") as handle:
        handle.write("[branch \"x\"]\n\tremote = origin\n" * 20000)  # far over the bound
    assert git_remote_repository(str(root)) == ("billing", "origin")


def test_verbose_says_why_a_folder_finds_no_notes(tmp_path):
    db = store_with(tmp_path, "billing")
    root = checkout(tmp_path, "payments-web")
    out, err = run_hook(db, "SessionStart", {**start_payload(root)}, LOCALMEM_HOOK_VERBOSE="1")
    assert out is None
    assert "no current memory carries a matching project tag" in err and "project:billing" in err, err


def hooks_status(db: Path, path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *extra,
                           "hooks", "status", str(path)], capture_output=True, text=True, env=hook_env(),
                          timeout=120, check=False)


def test_hooks_status_shows_the_project_how_it_matched_and_its_counts(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        old = store.store("Billing runs on Postgres 14.", tags=["project:billing"])
        store.supersede(old, "Billing runs on Postgres 16.", tags=["project:billing"])
        store.store(BILLING, tags=["project:billing_api"])
    root = checkout(tmp_path, "billing-api")
    proc = hooks_status(db, root / "src")
    assert proc.returncode == 0, proc.stderr
    assert "is project billing-api" in proc.stdout
    assert "project:billing: 1 current of 2 notes" in proc.stdout
    assert "project:billing_api: 1 current of 1 notes" in proc.stdout
    assert "in all: 2 current of 3 notes" in proc.stdout
    data = json.loads(hooks_status(db, root, "--json").stdout)
    assert data["project"] == "billing-api" and (data["current"], data["total"]) == (2, 3)
    lonely = hooks_status(db, checkout(tmp_path, "website"))
    assert "no note carries a matching project tag" in lonely.stdout and "project:billing" in lonely.stdout
    missing = hooks_status(db, tmp_path / "nowhere")
    assert missing.returncode != 0 and "PATH" in missing.stderr


def test_a_captured_session_and_a_readme_style_note_lead_the_next_session(tmp_path):
    """Captured through Stop from a transcript in Claude Code's shape, then a new session starts:
    the decisions lead, the note tagged with the short name is there, the chit-chat is not."""
    from tests.claude_code_transcript import Transcript

    db = store_with(tmp_path, "billing")  # stored by hand, tagged as the README shows: project:billing
    root = checkout(tmp_path, "billing-api")
    session = Transcript(tmp_path / "s1.jsonl", "first-session", str(root))
    session.user("Decision: refunds over 500 EUR need a second approver from finance.")
    session.assistant("Understood, I'll add the second-approver check to the refund flow.")
    session.tool_round("Bash", {"command": "pytest -q"}, "3 passed in 0.41s")
    session.user("thanks!")
    session.user("Can you run the tests again?")
    stop = {"session_id": "first-session", "transcript_path": str(session.path), "cwd": str(root),
            "hook_event_name": "Stop"}
    run_hook(db, "Stop", stop)
    out, err = run_hook(db, "SessionStart", start_payload(root / "src", session="second-session"),
                        LOCALMEM_HOOK_VERBOSE="1")
    block = block_of(out)
    assert "second approver" in block and BILLING in block, err
    assert block.index("second approver") < block.index("Understood, I'll add"), block  # a decision leads
    assert "thanks!" not in block and "run the tests again" not in block and "3 passed" not in block
    assert "project:billing (" in err and "project:billing-api (" in err, err


@pytest.mark.parametrize("cwd, reason", [
    ("src/orchid", "an absolute path"), (7, "a string"), ("/tmp/or\x00chid", "without NUL"),
    ("/" + "a/" * 2100, "at most 4096 characters"),
])
def test_a_bad_cwd_is_refused_with_what_is_wrong_with_it(tmp_path, cwd, reason):
    """A 4,201-character absolute path was refused as "must be an absolute path": the reason given
    was not the one that applied."""
    from localmem.hooks.events import answer_hook
    from localmem.hooks.settings import HookSettings

    with MemoryStore(tmp_path / "m.db", embedder="hash") as store:
        with pytest.raises(ValidationError, match=f"'cwd' must be {reason}"):
            answer_hook(store, "UserPromptSubmit", {"session_id": "s1", "cwd": cwd, "prompt": "x"}, HookSettings())
