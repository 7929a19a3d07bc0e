"""Installing ``localmem hook`` into Claude Code's settings file, and taking it out again.

Claude Code reads hooks from ``~/.claude/settings.json`` (the user's, every
project) or ``<project>/.claude/settings.json``, as
``{"hooks": {EVENT: [{"hooks": [{"type": "command", "command": ..., "timeout": S}]}]}}``
(no ``matcher``: every session start, every prompt). localmem's entries are
the commands that run ``localmem ... hook EVENT``; everything else in the
file is kept as it is. Installing is idempotent (an entry with the same
command is left alone; one with another localmem path or store is
replaced), uninstalling removes only localmem's entries. Nothing is written
unless asked: the caller shows ``diff`` first, then ``write`` keeps a
timestamped copy of the old file beside it.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import ValidationError
from ..paths import make_folders
from .discovery import replace_file

__all__ = ["CLAUDE_CODE_EVENTS", "Change", "fast_hook_program", "hook_command", "install", "is_fast_program",
           "localmem_program", "plan", "read_settings",
           "settings_path", "snippet", "uninstall", "write"]

# event -> Claude Code's own timeout for the command, in seconds: a margin over the hook's
# deadline (client.PROMPT_DEADLINE / CAPTURE_DEADLINE), which answers first.
CLAUDE_CODE_EVENTS = {"SessionStart": 10, "UserPromptSubmit": 10, "PreCompact": 60, "Stop": 60,
                      "SessionEnd": 60}
MAX_SETTINGS_BYTES = 8 * 1024 * 1024
FAST_CLIENT = "fast_client.py"  # in this folder


@dataclass(frozen=True)
class Change:
    """What installing or uninstalling does to one settings file."""

    path: Path
    before: str  # the file's text ("" when it does not exist)
    after: str
    settings: dict[str, Any]

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> str:
        label = str(self.path)
        return "".join(difflib.unified_diff(
            self.before.splitlines(keepends=True), self.after.splitlines(keepends=True),
            fromfile=f"{label} (now)" if self.before else "/dev/null", tofile=f"{label} (after)"))


def settings_path(scope: str, project_dir: str | None = None) -> Path:
    """``~/.claude/settings.json`` (``user``) or ``<project_dir or cwd>/.claude/settings.json``."""
    if scope == "user":
        return Path(os.path.expanduser("~")) / ".claude" / "settings.json"
    return Path(os.path.abspath(project_dir or os.getcwd())) / ".claude" / "settings.json"


def localmem_program() -> list[str]:
    """The command that runs this localmem, absolute: the script itself, else the one on PATH,
    else this Python with ``-m localmem``."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and os.path.basename(argv0).startswith("localmem") and os.path.isfile(argv0):
        return [os.path.abspath(argv0)]
    found = shutil.which("localmem")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "localmem"]


def fast_hook_program() -> list[str]:
    """The program the installed hooks run: this Python, without ``site`` (``-S``), on the
    standard-library hook client's file (``fast_client``: see there why); ``localmem_program()``
    where that cannot be named (no interpreter path, or the package is not a folder of files)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), FAST_CLIENT)
    if not sys.executable or not os.path.isfile(script):
        return localmem_program()
    return [os.path.abspath(sys.executable), "-S", script]


def hook_command(event: str, program: list[str], db: str | None = None,
                 embedder: str | None = None) -> str:
    words = list(program)
    if db:
        words += ["--db", os.path.abspath(os.path.expanduser(db))]
    if embedder:
        words += ["--embedder", embedder]
    return shlex.join([*words, "hook", event])


def is_localmem_command(command: Any) -> bool:
    """Whether a hook command runs ``localmem ... hook EVENT`` (any path, any options), the
    console script, ``python -m localmem`` or the fast client's file."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if "hook" not in words:
        return False
    program = words[:words.index("hook")]
    return any(os.path.basename(w).split(".", 1)[0] == "localmem" for w in program) or \
        any(a == "-m" and b == "localmem" for a, b in zip(program, program[1:])) or is_fast_program(program)


def is_fast_program(words: list[str]) -> bool:
    """Whether a command's words run the fast client (``.../localmem/hooks/fast_client.py``)."""
    return any(w.replace(os.sep, "/").endswith(f"/localmem/hooks/{FAST_CLIENT}") for w in words)


def snippet(commands: dict[str, str]) -> dict[str, Any]:
    """localmem's entries alone, in the settings file's shape."""
    return {"hooks": {event: [{"hooks": [{"type": "command", "command": command,
                                         "timeout": CLAUDE_CODE_EVENTS[event]}]}]
                      for event, command in commands.items()}}


def read_settings(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_SETTINGS_BYTES + 1)
    except FileNotFoundError:
        return "", {}
    except IsADirectoryError:
        raise ValidationError(f"{path} is a directory, not a settings file") from None
    if len(raw) > MAX_SETTINGS_BYTES:
        raise ValidationError(f"{path} is larger than {MAX_SETTINGS_BYTES} bytes; not a settings file to edit")
    text = raw.decode("utf-8", errors="replace")
    if not text.strip():
        return text, {}
    try:
        settings = json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"{path} is not valid JSON ({exc}); fix it first, nothing was changed") from None
    if not isinstance(settings, dict):
        raise ValidationError(f"{path} holds a JSON {type(settings).__name__}, not an object; nothing was changed")
    return text, settings


def _hooks_table(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    table = settings.setdefault("hooks", {})
    if not isinstance(table, dict):
        raise ValidationError(f"{path}: 'hooks' is not an object; nothing was changed")
    return table


def _remove_ours(groups: list[Any], keep: str | None = None) -> tuple[list[Any], bool]:
    """``groups`` without localmem's commands (but ``keep``); groups emptied by that go too.
    Returns (groups, whether ``keep`` was found)."""
    kept_groups: list[Any] = []
    found = False
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(entries, list):
            kept_groups.append(group)
            continue
        entries_left = []
        for entry in entries:
            command = entry.get("command") if isinstance(entry, dict) else None
            if keep is not None and command == keep and not found:
                found = True
                entries_left.append(entry)
            elif not is_localmem_command(command):
                entries_left.append(entry)
        if entries_left or not entries:
            kept_groups.append({**group, "hooks": entries_left} if entries_left != entries else group)
    return kept_groups, found


def install(settings: dict[str, Any], commands: dict[str, str], path: Path) -> dict[str, Any]:
    """``settings`` with localmem's hook commands (a copy; the argument is left as it is)."""
    result = copy.deepcopy(settings)
    table = _hooks_table(result, path)
    for event, command in commands.items():
        groups = table.get(event, [])
        if not isinstance(groups, list):
            raise ValidationError(f"{path}: hooks.{event} is not a list; nothing was changed")
        groups, found = _remove_ours(groups, keep=command)
        if not found:
            groups.append({"hooks": [{"type": "command", "command": command,
                                      "timeout": CLAUDE_CODE_EVENTS[event]}]})
        table[event] = groups
    return result


def uninstall(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    """``settings`` without localmem's hook commands; what they emptied goes too."""
    result = copy.deepcopy(settings)
    table = result.get("hooks")
    if not isinstance(table, dict):
        return result
    for event in list(table):
        groups = table[event]
        if not isinstance(groups, list):
            continue
        left, _ = _remove_ours(groups)
        if left != groups:
            if left:
                table[event] = left
            else:
                del table[event]
    if not table and settings.get("hooks"):
        del result["hooks"]
    return result


def plan(path: Path, commands: dict[str, str] | None) -> Change:
    """The change installing ``commands`` (None: uninstalling) makes to the file at ``path``."""
    before, settings = read_settings(path)
    after_settings = install(settings, commands, path) if commands is not None else uninstall(settings, path)
    if after_settings == settings and before.strip():
        return Change(path, before, before, settings)  # same content: the file stays byte for byte
    after = json.dumps(after_settings, indent=2, ensure_ascii=False) + "\n"
    if not before.strip() and not after_settings:
        after = before
    return Change(path, before, after, after_settings)


def write(change: Change) -> Path | None:
    """Write the change (through a symlink to its target), keeping a dated copy of the old file;
    returns the copy's path (None when there was no file before)."""
    target = Path(os.path.realpath(change.path))
    make_folders(target.parent)  # 0755 less the umask: never group-writable, even under umask 002
    backup = None
    mode = 0o644
    if target.exists():
        mode = target.stat().st_mode & 0o7777
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        backup = target.with_name(f"{target.name}.localmem-backup-{stamp}")
        number = 1
        while backup.exists():
            backup = target.with_name(f"{target.name}.localmem-backup-{stamp}-{number}")
            number += 1
        shutil.copy2(target, backup)
    replace_file(str(target), change.after.encode("utf-8"), mode)
    return backup
