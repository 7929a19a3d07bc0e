"""``localmem hooks install|uninstall claude-code``, run as the CLI subprocess, on settings files in
temporary directories only (HOME is a temporary directory for --user)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EVENTS = {"SessionStart", "UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"}
THEIRS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo localmem hook-ish"}]}],
    },
}


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path / "home"


def cli(home: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALMEM_", "XDG_")) or k == "LOCALMEM_DAEMON"}
    env.update(PYTHONPATH=str(REPO), HOME=str(home))
    return subprocess.run([sys.executable, "-m", "localmem", *args], env=env, capture_output=True,
                          text=True, timeout=60, cwd=cwd or home)


def user_settings(home: Path) -> Path:
    return home / ".claude" / "settings.json"


def write_settings(path: Path, data: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(data, indent=4).encode()
    path.write_bytes(raw)
    return raw


def localmem_commands(settings: dict) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for entry in group.get("hooks", []):
                if " hook " in entry["command"] and "localmem" in entry["command"]:
                    found.setdefault(event, []).append(entry["command"])
    return found


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".localmem-backup-*"))


def test_install_shows_the_diff_and_writes_nothing_without_write(home: Path):
    path = user_settings(home)
    before = write_settings(path, THEIRS)
    result = cli(home, "hooks", "install", "claude-code")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"--- {path} (now)\n+++ {path} (after)\n")
    assert '+            "command": ' in result.stdout and "hook UserPromptSubmit" in result.stdout
    assert "nothing written: add --write" in result.stderr
    assert path.read_bytes() == before and backups(path) == []


def test_install_writes_with_backup_keeps_other_keys_and_is_idempotent(home: Path, tmp_path: Path):
    path = user_settings(home)
    before = write_settings(path, THEIRS)
    db = tmp_path / "my store.db"
    result = cli(home, "--db", str(db), "hooks", "install", "claude-code", "--write")
    assert result.returncode == 0, result.stderr
    [backup] = backups(path)
    assert backup.read_bytes() == before
    settings = json.loads(path.read_text())
    assert settings["model"] == THEIRS["model"] and settings["permissions"] == THEIRS["permissions"]
    assert settings["hooks"]["PreToolUse"] == THEIRS["hooks"]["PreToolUse"]
    assert THEIRS["hooks"]["Stop"][0] in settings["hooks"]["Stop"]
    ours = localmem_commands(settings)
    assert set(ours) == EVENTS and all(len(commands) == 1 for commands in ours.values())
    for event, [command] in ours.items():
        words = shlex.split(command)
        assert os.path.isabs(words[0])
        assert words[-2:] == ["hook", event]
        assert words[words.index("--db") + 1] == str(db)  # the path with a space survives the shell
    for group in (g for groups in settings["hooks"].values() for g in groups):
        assert "matcher" not in group or group["matcher"] == "Bash"

    written = path.read_bytes()
    again = cli(home, "--db", str(db), "hooks", "install", "claude-code", "--write")
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert path.read_bytes() == written and len(backups(path)) == 1


def test_install_replaces_an_older_localmem_entry(home: Path, tmp_path: Path):
    path = user_settings(home)
    cli(home, "--db", str(tmp_path / "old.db"), "hooks", "install", "claude-code", "--write")
    result = cli(home, "--db", str(tmp_path / "new.db"), "hooks", "install", "claude-code", "--write")
    assert result.returncode == 0, result.stderr
    ours = localmem_commands(json.loads(path.read_text()))
    assert all(len(commands) == 1 and "new.db" in commands[0] for commands in ours.values())


def test_uninstall_removes_only_localmems_entries(home: Path):
    path = user_settings(home)
    write_settings(path, THEIRS)
    assert cli(home, "hooks", "install", "claude-code", "--write").returncode == 0
    shown = cli(home, "hooks", "uninstall", "claude-code")
    assert shown.returncode == 0 and "-" in shown.stdout and "nothing written" in shown.stderr
    assert localmem_commands(json.loads(path.read_text()))  # not yet
    result = cli(home, "hooks", "uninstall", "claude-code", "--write")
    assert result.returncode == 0, result.stderr
    assert json.loads(path.read_text()) == THEIRS
    assert len(backups(path)) == 2
    again = cli(home, "hooks", "uninstall", "claude-code", "--write")
    assert "nothing to change" in again.stdout and len(backups(path)) == 2


def test_install_creates_a_missing_file_and_uninstall_leaves_an_empty_object(home: Path):
    path = user_settings(home)
    assert cli(home, "hooks", "install", "claude-code", "--write").returncode == 0
    assert set(localmem_commands(json.loads(path.read_text()))) == EVENTS and backups(path) == []
    assert cli(home, "hooks", "uninstall", "claude-code", "--write").returncode == 0
    assert json.loads(path.read_text()) == {}


def test_project_scope_writes_the_projects_file(home: Path, tmp_path: Path):
    project = tmp_path / "project"
    project.mkdir()
    assert cli(home, "hooks", "install", "claude-code", "--project", "--write", cwd=project).returncode == 0
    assert set(localmem_commands(json.loads((project / ".claude" / "settings.json").read_text()))) == EVENTS
    other = tmp_path / "other"
    other.mkdir()
    assert cli(home, "hooks", "install", "claude-code", "--project", str(other), "--write").returncode == 0
    assert (other / ".claude" / "settings.json").exists()
    assert not user_settings(home).exists()


def test_print_shows_the_snippet_alone(home: Path):
    result = cli(home, "hooks", "install", "claude-code", "--print")
    assert result.returncode == 0, result.stderr
    snippet = json.loads(result.stdout)
    assert set(snippet) == {"hooks"} and set(snippet["hooks"]) == EVENTS
    entry = snippet["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert entry["type"] == "command" and entry["timeout"] > 2 and entry["command"].endswith("hook UserPromptSubmit")
    assert not user_settings(home).exists()


def test_invalid_settings_are_left_alone(home: Path):
    path = user_settings(home)
    path.parent.mkdir(parents=True)
    path.write_text('{"model": "opus",')
    result = cli(home, "hooks", "install", "claude-code", "--write")
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert path.read_text() == '{"model": "opus",' and backups(path) == []
    path.write_text('{"hooks": []}')
    result = cli(home, "hooks", "install", "claude-code", "--write")
    assert result.returncode == 2 and "'hooks' is not an object" in result.stderr


def test_symlinked_settings_are_written_through_the_link(home: Path, tmp_path: Path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude-settings.json"
    write_settings(target, {"model": "opus"})
    user_settings(home).parent.mkdir(parents=True)
    user_settings(home).symlink_to(target)
    assert cli(home, "hooks", "install", "claude-code", "--write").returncode == 0
    assert user_settings(home).is_symlink()
    assert set(localmem_commands(json.loads(target.read_text()))) == EVENTS


def test_json_output_reports_the_change(home: Path):
    result = cli(home, "--json", "hooks", "install", "claude-code")
    report = json.loads(result.stdout)
    assert report["changed"] is True and report["written"] is False and report["backup"] is None
    assert report["settings_path"] == str(user_settings(home)) and "hook SessionStart" in report["diff"]
