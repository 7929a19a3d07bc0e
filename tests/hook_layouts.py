"""Folder layouts for the project-scope tests, written as git 2.39 writes them (no git binary needed),
and the hook and ``hooks status`` run as subprocesses with ``HOME`` in the test's folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.claude_code_transcript import Transcript
from tests.hook_helpers import hook_env, run_hook


def checkout(folder: Path, remote: str | None = None) -> Path:
    """A checkout at ``folder``: ``.git`` a folder, with ``remote`` as origin's URL."""
    (folder / ".git").mkdir(parents=True)
    config = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
    if remote:
        config += f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    (folder / ".git" / "config").write_text(config, "utf-8")
    return folder


def worktree(main_git: Path, folder: Path, *, relative: bool = False) -> Path:
    """A worktree of the repository whose git folder is ``main_git`` (``git worktree add``): ``.git`` is a file."""
    admin = main_git / "worktrees" / folder.name
    admin.mkdir(parents=True)
    (admin / "commondir").write_text("../..\n", "utf-8")
    (admin / "gitdir").write_text(f"{folder / '.git'}\n", "utf-8")
    folder.mkdir(parents=True)
    target = Path("..") / admin.relative_to(folder.parent) if relative else admin  # git 2.48's --relative-paths
    (folder / ".git").write_text(f"gitdir: {target}\n", "utf-8")
    return folder


def submodule(super_root: Path, path: str, remote: str) -> Path:
    """A submodule at ``super_root/path`` (``git submodule add``): ``.git`` is a file naming .git/modules/PATH."""
    module = super_root / ".git" / "modules" / path
    module.mkdir(parents=True)
    depth = len(Path(path).parts)
    (module / "config").write_text(
        f"[core]\n\tbare = false\n\tworktree = {'../' * (depth + 2)}{path}\n"
        f'[remote "origin"]\n\turl = {remote}\n', "utf-8")
    folder = super_root / path
    folder.mkdir(parents=True)
    (folder / ".git").write_text(f"gitdir: {'../' * depth}.git/modules/{path}\n", "utf-8")
    return folder


def capture(db: Path, home: Path, cwd: Path | str, turn: str, session: str, **env: str) -> str:
    """One turn captured by ``Stop`` from ``cwd``; stderr (``-v``)."""
    transcript = Path(db).parent / f"{session}.jsonl"
    Transcript(transcript, session, str(cwd)).user(turn)
    _, err = run_hook(db, "Stop", {"session_id": session, "cwd": str(cwd), "transcript_path": str(transcript)},
                      HOME=str(home), LOCALMEM_HOOK_VERBOSE="1", **env)
    return err


def prompt(db: Path, home: Path, cwd: Path | str, text: str, **env: str) -> tuple[str, str]:
    """The block injected for ``text`` asked from ``cwd`` ("" for none), and stderr (``-v``)."""
    answer, err = run_hook(db, "UserPromptSubmit", {"session_id": "asking-session", "cwd": str(cwd), "prompt": text},
                           HOME=str(home), LOCALMEM_HOOK_RELEVANCE_FLOOR="0.3", LOCALMEM_HOOK_VERBOSE="1", **env)
    return (json.dumps(answer) if answer is not None else ""), err


def status(db: Path, home: Path, folder: Path, *extra: str, **env: str) -> str:
    """``localmem hooks status FOLDER`` (``--json`` in ``extra``): its stdout."""
    proc = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *extra,
                           "hooks", "status", str(folder)], capture_output=True, text=True, encoding="utf-8",
                          env=hook_env(HOME=str(home), **env), timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def project_tags(memory: dict) -> list[str]:
    return [tag for tag in memory["tags"] if tag.startswith("project:")]
