"""The project scope of a hook: the names a working directory goes by (filesystem only).

The checkout is the nearest directory at or above ``cwd`` that holds ``.git``
(so a session that moved into ``src/`` keeps its project), else ``cwd``
itself; a checkout at the home folder (``~/.git``, dotfiles) counts for home alone. Its names, in the order they are tried:

1. ``LOCALMEM_HOOK_PROJECT`` (``HookSettings.project``), when set: that name alone;
2. the project file ``.localmem.json`` at the checkout's root, ``{"project": "billing"}``:
   that name alone (docs/hooks.md, "Which project a folder is"); the same file's
   ``{"capture": false}`` turns capture off for the project (docs/privacy.md);
3. the checkout folder's base name;
4. the repository name of the git remote (``origin`` first), read from
   ``.git/config`` without running git.

A name is put in NFC form and lowercased, with characters other than letters and
digits (of any script), ``.``, ``_`` and ``-`` made ``-``; the primary name (the first found) is the one capture
tags new memories with. Which stored ``project:`` tags a name matches (its
forms: ``billing`` for ``billing-api``) is ``scope``'s job. Every read is
bounded: at most ``MAX_WALK_UP`` directories, ``MAX_FILE_BYTES`` per file.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass

from ..errors import ValidationError

MAX_WALK_UP = 64  # directory levels looked at for .git: bounded by construction
_UNSAFE = re.compile(r"[^\w.-]+")  # letters and digits of any script stay: "проект-1" is not "1"
MAX_NAME = 100
PROJECT_FILE = ".localmem.json"
MAX_FILE_BYTES = 64 * 1024
_REMOTE_SECTION = re.compile(r'^\s*\[\s*remote\s+"([^"]*)"\s*\]\s*$')
_SECTION = re.compile(r"^\s*\[")
_URL = re.compile(r"^\s*url\s*=\s*(.+?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class ProjectNames:
    """The names of a working directory's project: ``(name, how it was found, as written)``, primary first.

    ``explicit``: the name came from the setting or the project file, and no other is tried.
    """
    root: str | None
    names: tuple[tuple[str, str, str], ...]
    explicit: bool = False

    @property
    def primary(self) -> str | None:
        return self.names[0][0] if self.names else None


def project_root(cwd: str) -> str:
    """The nearest directory at or above ``cwd`` holding ``.git``, else ``cwd`` (normalised). A checkout
    at the home folder (dotfiles: ``~/.git``) is the project of home alone, not of every folder below it."""
    start = os.path.normpath(cwd)
    home = os.path.normpath(os.path.expanduser("~"))
    current = start
    for _ in range(MAX_WALK_UP):
        try:
            if os.path.lexists(os.path.join(current, ".git")) and (current != home or current == start):
                return current
        except (OSError, ValueError):
            return start
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return start


def normalise(raw: str) -> str | None:
    # NFC first: macOS writes "café" in a folder name as "cafe" and a combining accent.
    name = _UNSAFE.sub("-", unicodedata.normalize("NFC", raw).strip().lower()).strip("-")[:MAX_NAME]
    return name or None


def project_names(cwd: str | None, override: str | None = None) -> ProjectNames:
    """Every name the project at ``cwd`` goes by (see the module docstring)."""
    if override:
        name = normalise(override)
        return ProjectNames(None, ((name, "the LOCALMEM_HOOK_PROJECT setting", override),) if name else (), True)
    if not cwd:
        return ProjectNames(None, ())
    root = project_root(cwd)
    from_file = read_project_file(root)
    if from_file is not None:
        return ProjectNames(root, ((from_file, f"the project file {os.path.join(root, PROJECT_FILE)}",
                                    from_file),), True)
    names: list[tuple[str, str, str]] = []
    folder = normalise(os.path.basename(root))
    if folder:
        names.append((folder, f"the folder name of {root}", os.path.basename(root)))
    remote = git_remote_repository(root)
    if remote is not None and normalise(remote[0]) != folder:
        names.append((normalise(remote[0]) or "", f"the repository name of git remote {remote[1]!r}", remote[0]))
    return ProjectNames(root, tuple(names))


def project_name(cwd: str | None, override: str | None = None) -> str | None:
    """The scope's primary name, or None when neither a usable ``cwd`` nor an override is given."""
    return project_names(cwd, override).primary


def _read_bounded(path: str, *, whole: bool = True) -> str | None:
    """A small text file's content; None when it is absent or not a regular file. Over
    ``MAX_FILE_BYTES``: an error when ``whole`` (a project file), else its start (git's config)."""
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_FILE_BYTES and whole:
        raise ValidationError(f"{path} is over {MAX_FILE_BYTES} bytes; a project file is a small JSON object")
    return raw[:MAX_FILE_BYTES].decode("utf-8", errors="replace")


def _project_file(root: str) -> dict | None:
    """The settings in ``root/.localmem.json``; None without the file. A file that is there
    but wrong is an error naming the file and the field: a project file that silently did
    nothing would scope the notes elsewhere, or capture what its owner switched off."""
    path = os.path.join(root, PROJECT_FILE)
    text = _read_bounded(path)
    if text is None:
        return None
    try:
        data = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError) as exc:
        raise ValidationError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValidationError(f"{path} must hold a JSON object like {{\"project\": \"billing\"}}")
    unknown = sorted(str(k)[:40] for k in data if k not in ("project", "capture"))
    if unknown:
        raise ValidationError(f"{path}: unknown field(s) {', '.join(unknown)} (known: capture, project)")
    if not isinstance(data.get("capture", True), bool):
        raise ValidationError(f"{path}: 'capture' must be true or false")
    return data


def read_project_file(root: str) -> str | None:
    """The project named by ``root/.localmem.json`` (``{"project": NAME}``); None without the
    file or without a ``project`` field in it."""
    data = _project_file(root)
    if data is None or "project" not in data:
        return None
    value = data["project"]
    name = normalise(value) if isinstance(value, str) and "\x00" not in value else None
    if name is None:
        raise ValidationError(f"{os.path.join(root, PROJECT_FILE)}: 'project' must be a non-empty name "
                              "(letters, digits, '.', '_', '-')")
    return name


def capture_allowed(cwd: str) -> bool:
    """Whether the project at ``cwd`` lets the hook capture: False when its root's
    ``.localmem.json`` says ``"capture": false`` (docs/privacy.md). A broken file is an error
    naming it, so capture stops: a privacy switch is never guessed. A home checkout's file
    (``~/.git`` beside ``~/.localmem.json``) that turns capture off still does, for every folder
    below home: it did while that checkout named their project (``project_root``)."""
    root = project_root(cwd)
    home = os.path.normpath(os.path.expanduser("~"))
    folders = [root]
    if root != home and os.path.normpath(cwd).startswith(home + os.sep) and os.path.lexists(os.path.join(home, ".git")):
        folders.append(home)
    return all((_project_file(folder) or {}).get("capture", True) for folder in folders)


def git_remote_repository(root: str) -> tuple[str, str] | None:
    """``(repository name as written, remote)`` from ``root/.git/config``: ``origin``'s URL, else the first."""
    text = _read_bounded(os.path.join(root, ".git", "config"), whole=False)
    if text is None:
        return None
    urls: dict[str, str] = {}
    remote = None
    for line in text.splitlines():
        section = _REMOTE_SECTION.match(line)
        if section:
            remote = section.group(1)
            continue
        if _SECTION.match(line):
            remote = None
            continue
        url = _URL.match(line)
        if remote is not None and url and remote not in urls:
            urls[remote] = url.group(1).strip('"')
    if not urls:
        return None
    remote = "origin" if "origin" in urls else next(iter(urls))
    tail = re.split(r"[/:\\]", urls[remote].rstrip("/"))[-1]
    if tail.endswith(".git"):
        tail = tail[:-4]
    return (tail, remote) if normalise(tail) else None


def project_tag(name: str) -> str:
    return f"project:{name}"
