"""The project scope of a hook: a ``project:<name>`` tag named from the working directory.

The name is the base name of the nearest directory at or above ``cwd`` that
holds ``.git`` (so a session that moved into ``src/`` keeps its project),
else of ``cwd`` itself; lowercased, with characters other than letters,
digits, ``.``, ``_`` and ``-`` made ``-``. Two checkouts with the same base
name share a scope; ``LOCALMEM_HOOK_PROJECT`` names it explicitly. Captured
memories also keep the full path in their metadata (``project_path``).
"""

from __future__ import annotations

import os
import re

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
