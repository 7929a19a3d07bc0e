"""What the installed hooks will run: localmem's commands in Claude Code's settings files, read
for ``localmem doctor`` (the user's file and the current folder's project file; nothing is
written). Each is described by the settings file, its events, its form (the fast command
``hooks install`` writes, or the older console script), whether its program and files still
exist, and the store it names."""

from __future__ import annotations

import os
import shlex
from typing import Any

from ..errors import ValidationError
from .install import is_fast_program, is_localmem_command, read_settings, settings_path

__all__ = ["describe", "installed"]


def installed(project_dir: str | None = None) -> list[dict[str, Any]]:
    """One entry per settings file and hook command (the user's file, then the project's)."""
    found: list[dict[str, Any]] = []
    paths = [settings_path("user"), settings_path("project", project_dir)]
    for path in dict.fromkeys(paths):
        try:
            _, settings = read_settings(path)
        except ValidationError as exc:
            found.append({"settings": str(path), "problem": exc.message})
            continue
        table = settings.get("hooks")
        by_command: dict[str, list[str]] = {}
        for event, groups in table.items() if isinstance(table, dict) else ():
            for group in groups if isinstance(groups, list) else ():
                entries = group.get("hooks") if isinstance(group, dict) else None
                for entry in entries if isinstance(entries, list) else ():
                    command = entry.get("command") if isinstance(entry, dict) else None
                    if is_localmem_command(command):
                        by_command.setdefault(_without_event(command), []).append(event)
        for command, events in by_command.items():
            found.append({"settings": str(path), "events": events, **_command(command)})
    return found


def _without_event(command: str) -> str:
    words = shlex.split(command)
    return shlex.join(words[:words.index("hook")])


def _command(program: str) -> dict[str, Any]:
    words = shlex.split(program)
    db = words[words.index("--db") + 1] if "--db" in words[:-1] else None
    files = [w for w in words if os.path.isabs(w) and w != db]
    missing = [w for w in files if not os.path.exists(w)]
    return {"command": program, "form": "fast" if is_fast_program(words) else "console script",
            "db": db, "missing": missing}


def describe(entries: list[dict[str, Any]], store_path: str) -> list[str]:
    """``doctor``'s lines about the installed hooks (``store_path``: the store being checked)."""
    if not entries:
        return [f"hooks: none installed for Claude Code ({settings_path('user')}, "
                f"{settings_path('project')}); 'localmem hooks install claude-code --write' installs them"]
    lines = []
    for entry in entries:
        where = f"hooks: {entry['settings']}"
        if "problem" in entry:
            lines.append(f"{where}: unreadable ({entry['problem']})")
            continue
        text = f"{where}: {', '.join(entry['events'])} run {entry['command']}"
        if entry["missing"]:
            text += f"; MISSING {', '.join(entry['missing'])}: reinstall with 'localmem hooks install claude-code --write'"
        elif entry["form"] != "fast":
            text += ("; the console script starts slower than the fast command 'localmem hooks install "
                     "claude-code --write' writes now")
        else:
            text += " (the fast command)"
        db = entry["db"]
        if db and os.path.realpath(os.path.expanduser(db)) != os.path.realpath(store_path):
            text += f"; for another store ({db})"
        lines.append(text)
    return lines
