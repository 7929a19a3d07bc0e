"""The project scope of a hook: a ``project:<name>`` tag named from the working directory.

The name is the base name of the nearest directory at or above ``cwd`` that
holds ``.git`` (so a session that moved into ``src/`` keeps its project),
else of ``cwd`` itself; lowercased, with characters other than letters,
digits, ``.``, ``_`` and ``-`` made ``-``. Two checkouts with the same base
name share a scope; ``LOCALMEM_HOOK_PROJECT`` names it explicitly. Captured
memories also keep the full path in their metadata (``project_path``). A
``.localmem.json`` file at the root can turn capture off for the project (docs/privacy.md).
"""

from __future__ import annotations

import json
import os
import re

from ..errors import ConfigError

MAX_WALK_UP = 64  # directory levels looked at for .git: bounded by construction
_UNSAFE = re.compile(r"[^a-z0-9._-]+")
MAX_NAME = 100


def project_root(cwd: str) -> str:
    """The nearest directory at or above ``cwd`` holding ``.git``, else ``cwd`` (normalised)."""
    start = os.path.normpath(cwd)
    current = start
    for _ in range(MAX_WALK_UP):
        try:
            if os.path.lexists(os.path.join(current, ".git")):
                return current
        except (OSError, ValueError):
            return start
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return start


def project_name(cwd: str | None, override: str | None = None) -> str | None:
    """The scope's name, or None when neither a usable ``cwd`` nor an override is given."""
    raw = override if override else (os.path.basename(project_root(cwd)) if cwd else None)
    if not raw:
        return None
    name = _UNSAFE.sub("-", raw.strip().lower()).strip("-")[:MAX_NAME]
    return name or None


def project_tag(name: str) -> str:
    return f"project:{name}"


PROJECT_FILE = ".localmem.json"  # at the project root: {"capture": false} keeps every turn of it out
MAX_PROJECT_FILE = 64 * 1024


def capture_allowed(cwd: str) -> bool:
    """Whether the project at ``cwd`` lets the hook capture: False when its root's ``.localmem.json``
    file says ``"capture": false``. A file that cannot be read or is not such an object is a
    ``ConfigError`` naming it (capture then stops: a privacy switch is never guessed)."""
    path = os.path.join(project_root(cwd), PROJECT_FILE)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_PROJECT_FILE + 1)
    except FileNotFoundError:
        return True
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        if len(raw) > MAX_PROJECT_FILE:
            raise ValueError(f"larger than {MAX_PROJECT_FILE} bytes")
        values = json.loads(raw.decode("utf-8")) if raw.strip() else {}
        if not isinstance(values, dict):
            raise ValueError("must be a JSON object")
        unknown = sorted(str(k)[:40] for k in set(values) - {"capture", "project"})
        if unknown:  # "project" names the scope (the project file's other use)
            raise ValueError(f"unknown setting(s): {', '.join(unknown)} (known: capture, project)")
        if not isinstance(values.get("capture", True), bool):
            raise ValueError("'capture' must be true or false")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return values.get("capture", True)
