"""The project scope in the folder layouts people really have: a git worktree (named for its main repository), a
submodule (its own project), ``GIT_DIR``/``GIT_WORK_TREE`` in the environment, a symlinked folder, a folder deleted
while the session ran, a name with spaces that matches several tags, a remote URL holding a token.

Driven as Claude Code drives it: ``localmem hook EVENT`` (and ``localmem hooks status``) in a subprocess, the payload
on stdin, ``HOME`` a folder of the test's own. The git files are written as git writes them (tests/hook_layouts.py).
"""

from __future__ import annotations

import builtins
import json
import os
import subprocess
from pathlib import Path

from localmem import MemoryStore
from localmem.hooks import project
from localmem.hooks.project import project_names
from tests.claude_code_transcript import Transcript
from tests.hook_helpers import hook_command, hook_env
from tests.hook_layouts import capture, checkout, project_tags, prompt, status, submodule, worktree
from tests.test_hook_capture import memories

TURN = "The billing reconciliation job must run after the ledger export finishes each night."
LATER = "The ledger export moved to 01:30 so the reconciliation starts at 02:00 from now on."
TOKEN = "ghp_s3cretT0kenValue42"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_a_worktree_is_its_main_repositorys_project(tmp_path):
    home = _home(tmp_path)
    main = checkout(home / "code" / "billing", "git@github.com:acme/billing-api.git")
    fix = worktree(main / ".git", home / "code" / "billing-fix-login")
    relative = worktree(main / ".git", home / "code" / "billing-docs", relative=True)
    db = tmp_path / "m.db"
    capture(db, home, fix, TURN, "session-1")
    assert [project_tags(m) for m in memories(db)] == [["project:billing"]]
    block, err = prompt(db, home, main, TURN)  # the note written in the worktree is the repository's
    assert TURN in block, err
    text = status(db, home, relative)
    assert "is project billing" in text and f"a git worktree at {relative} of the repository {main}" in text, text
    assert "name 'billing-api': from the repository name of git remote 'origin'" in text, text
    assert "billing-docs" not in text.split("\n")[2:], text  # the worktree folder's name is not a name


def test_a_worktree_of_a_bare_repository_is_named_without_dot_git(tmp_path):
    home = _home(tmp_path)
    bare = home / "repos" / "orders.git"
    bare.mkdir(parents=True)
    (bare / "config").write_text("[core]\n\tbare = true\n", "utf-8")
    tree = worktree(bare, home / "work" / "orders-main")
    db = tmp_path / "m.db"
    capture(db, home, tree, TURN, "session-1")
    assert [project_tags(m) for m in memories(db)] == [["project:orders"]]


def test_a_submodule_is_its_own_project_named_by_its_remote_too(tmp_path):
    home = _home(tmp_path)
    shop = checkout(home / "code" / "shop", "git@github.com:acme/shop.git")
    sdk = submodule(shop, "lib/payments", "https://github.com/acme/payments-sdk.git")
    db = tmp_path / "m.db"
    capture(db, home, sdk / "src", TURN, "session-1")
    assert [project_tags(m) for m in memories(db)] == [["project:payments"]]
    text = status(db, home, sdk)
    assert "is project payments" in text and "name 'payments-sdk'" in text, text
    assert "its .git file names the git folder" in text, text
    assert "is project shop" in status(db, home, shop)


def test_git_dir_and_work_tree_in_the_environment_do_not_make_home_one_project(tmp_path):
    """A bare dotfiles repository used through GIT_DIR=~/.dotfiles GIT_WORK_TREE=~ (exported in the shell)."""
    home = _home(tmp_path)
    dotfiles = home / ".dotfiles"
    dotfiles.mkdir()
    config = '[core]\n\tbare = true\n[remote "origin"]\n\turl = git@github.com:me/dotfiles.git\n'
    (dotfiles / "config").write_text(config, "utf-8")
    (home / "notes").mkdir()
    api = checkout(home / "code" / "api")
    db = tmp_path / "m.db"
    env = {"GIT_DIR": str(dotfiles), "GIT_WORK_TREE": str(home)}
    capture(db, home, home / "notes", TURN, "session-1", **env)
    capture(db, home, api, LATER, "session-2", **env)
    assert {m["content"]: project_tags(m) for m in memories(db)} == {TURN: ["project:notes"], LATER: ["project:api"]}
    assert "dotfiles" not in status(db, home, home / "notes", **env)


def test_a_symlinked_project_folder_is_the_same_project_by_either_path(tmp_path):
    home = _home(tmp_path)
    real = checkout(home / "code" / "orchid", "git@github.com:acme/orchid.git")
    (real / "src").mkdir()
    link = home / "work"
    link.symlink_to(real, target_is_directory=True)
    db = tmp_path / "m.db"
    capture(db, home, link / "src", TURN, "session-1")
    assert [project_tags(m) for m in memories(db)] == [["project:orchid"]]
    block, err = prompt(db, home, real, TURN)
    assert TURN in block, err
    by_link, by_real = status(db, home, link), status(db, home, real)
    assert "is project orchid" in by_link and "is project orchid" in by_real
    assert f"{link} is {real} by its real path" in by_link, by_link
    into_src = home / "orchid-src"  # a link to a folder inside the checkout: the checkout's project too
    into_src.symlink_to(real / "src", target_is_directory=True)
    assert "is project orchid" in status(db, home, into_src)


def test_a_symlink_inside_a_checkout_to_a_folder_in_none_keeps_the_checkouts_project(tmp_path):
    home = _home(tmp_path)
    api = checkout(home / "code" / "api")
    shared = home / "shared-fixtures"
    shared.mkdir()
    (api / "fixtures").symlink_to(shared, target_is_directory=True)
    db = tmp_path / "m.db"
    capture(db, home, api / "fixtures", TURN, "session-1")
    assert [project_tags(m) for m in memories(db)] == [["project:api"]]


def _capture_with_the_folder_gone(db: Path, home: Path, cwd: Path, gone: Path, turn: str, session: str) -> str:
    """Stop run in ``cwd`` (its own working directory too) after ``gone`` was deleted, as a client whose session
    folder was removed runs it."""
    transcript = db.parent / f"{session}.jsonl"
    Transcript(transcript, session, str(cwd)).user(turn)
    payload = json.dumps({"session_id": session, "cwd": str(cwd), "transcript_path": str(transcript)})
    script = 'cd "$1" && rm -rf "$2" && shift 2 && exec "$@"'
    proc = subprocess.run(["sh", "-c", script, "sh", str(cwd), str(gone), *hook_command(db, "Stop")], input=payload,
                          capture_output=True, text=True, encoding="utf-8", timeout=120, check=False,
                          env=hook_env(HOME=str(home), LOCALMEM_HOOK_VERBOSE="1"))
    assert proc.returncode == 0 and not cwd.exists(), proc.stderr
    return proc.stderr


def test_a_folder_deleted_while_the_session_ran_keeps_the_sessions_project(tmp_path):
    home = _home(tmp_path)
    root = checkout(home / "code" / "ledger-tool")
    (root / "src").mkdir()
    db = tmp_path / "m.db"
    capture(db, home, root / "src", TURN, "session-1")
    err = _capture_with_the_folder_gone(db, home, root / "src", root, LATER, "session-1")
    assert {m["content"]: project_tags(m) for m in memories(db)} == {
        TURN: ["project:ledger-tool"], LATER: ["project:ledger-tool"]}, err
    assert "no longer exists" in err and "this session's earlier captures" in err, err


def test_a_deleted_folder_that_captured_nothing_before_is_not_captured_and_says_why(tmp_path):
    """Its .localmem.json (which may have turned capture off) went with it: nothing is guessed."""
    home = _home(tmp_path)
    root = checkout(home / "code" / "diary")
    (root / ".localmem.json").write_text('{"capture": false}', "utf-8")
    db = tmp_path / "m.db"
    MemoryStore(db, embedder="hash").close()
    err = _capture_with_the_folder_gone(db, home, root, root, TURN, "session-1")
    assert memories(db) == [] and "no longer exists and this session captured nothing before" in err, err


def test_a_folder_with_spaces_matching_several_tags_says_which_tag_capture_writes(tmp_path):
    home = _home(tmp_path)
    root = checkout(home / "code" / "Billing API")
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store(TURN, tags=["project:billing"])
        store.store(LATER, tags=["project:billing_api"])
    block, err = prompt(db, home, root, TURN)
    assert TURN in block, err
    assert "project:billing (" in err and "project:billing_api (" in err, err
    assert "recall asks all 2 tags, capture tags new notes project:billing-api: " in err, err
    turn = "The invoices table gained a currency column last sprint."
    err = capture(db, home, root, turn, "session-1")
    assert "new notes are tagged project:billing-api" in err, err
    assert [project_tags(m) for m in memories(db) if m["content"] == turn] == [["project:billing-api"]]


def test_a_remote_url_with_credentials_gives_its_name_and_never_its_token(tmp_path):
    home = _home(tmp_path)
    with_path = checkout(home / "code" / "orders", f"https://deploy:{TOKEN}@git.example.com/acme/orders-service.git")
    no_path = checkout(home / "code" / "mirror", f"https://deploy:{TOKEN}@git.example.com")
    db = tmp_path / "m.db"
    said = capture(db, home, with_path, TURN, "session-1") + capture(db, home, no_path, LATER, "session-2")
    said += prompt(db, home, with_path, TURN)[1] + prompt(db, home, no_path, LATER)[1]
    for folder in (with_path, no_path):
        said += status(db, home, folder) + status(db, home, folder, "--json")
    assert "name 'orders-service': from the repository name of git remote 'origin'" in said, said
    stored = json.dumps(memories(db))
    for secret in (TOKEN, TOKEN.lower(), "deploy"):
        assert secret not in said and secret not in stored, secret
    assert {m["content"]: project_tags(m) for m in memories(db)} == {TURN: ["project:orders"],
                                                                     LATER: ["project:mirror"]}


def test_the_lookup_opens_no_more_files_than_the_layout_needs(tmp_path, monkeypatch):
    """Files opened per prompt's project lookup (docs/hooks.md says these counts): none outside a checkout, the git
    config in one, the .git file, commondir and the main repository's config in a worktree."""
    home = _home(tmp_path)
    monkeypatch.setenv("HOME", str(home))
    checkout(home, "git@github.com:me/dotfiles.git")
    (home / "notes").mkdir()
    api = checkout(home / "code" / "api", "git@github.com:acme/api.git")
    named = checkout(home / "code" / "named")
    (named / ".localmem.json").write_text('{"project": "billing"}', "utf-8")
    tree = worktree(api / ".git", home / "code" / "api-fix")
    sdk = submodule(api, "lib/sdk", "https://github.com/acme/sdk.git")
    link = home / "api-link"
    link.symlink_to(api, target_is_directory=True)
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(project, "open", counting_open, raising=False)
    expected = {home / "notes": 0, home: 1, api / "src-missing": 1, api: 1, named: 1, tree: 3, sdk: 2, link: 1,
                tmp_path / "elsewhere": 0}
    for folder, count in expected.items():
        opened.clear()
        names = project_names(str(folder))
        assert len(opened) == count, (folder, opened, names)
