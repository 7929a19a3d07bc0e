"""The project scope of a hook: the names a working directory goes by (filesystem only).

A symlinked folder is the same project by either path (see ``locate``). The checkout
is the nearest directory at or above it that holds ``.git`` (so a session that moved into ``src/``
keeps its project), else ``cwd`` itself; a checkout at the home folder (``~/.git``, dotfiles) counts
for home alone, and the walk up stops at home. A ``.git`` file (``gitdir: ...``) is a worktree, named
for its main repository, or a submodule (or a separate git folder), its own project; either's remote is
read from the git folder it names. ``GIT_DIR``/``GIT_WORK_TREE`` are not read: a project is a folder.
Its names, in the order they are tried:

1. ``LOCALMEM_HOOK_PROJECT`` (``HookSettings.project``), when set: that name alone;
2. the project file ``.localmem.json`` at the checkout's root, ``{"project": "billing"}``:
   that name alone (docs/hooks.md, "Which project a folder is"); the same file's
   ``{"capture": false}`` turns capture off for the project (docs/privacy.md);
3. the checkout folder's base name (a worktree: its main repository folder's);
4. the repository name of the git remote (``origin`` first), read from
   the git config without running git; a URL's user and password are never part of it.

A name is put in NFC form and lowercased, with characters other than letters and
digits (of any script), ``.``, ``_`` and ``-`` made ``-``; the primary name (the first found) is the one capture
tags new memories with. Which stored ``project:`` tags a name matches (its
forms: ``billing`` for ``billing-api``) is ``scope``'s job. Every read is
bounded: at most ``MAX_WALK_UP`` directories, ``MAX_FILE_BYTES`` per file. Files opened per lookup: none
for a folder in no checkout; in a checkout one, the project file when there is one, else the git config;
with a ``.git`` file, that file too (a submodule: 2), and a worktree's ``commondir`` (a worktree: 3).
Counted in tests/test_hook_project_layouts.py.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import NamedTuple

from ..errors import ValidationError

MAX_WALK_UP = 64  # directory levels looked at for .git: bounded by construction
_UNSAFE = re.compile(r"[^\w.-]+")  # letters and digits of any script stay: "проект-1" is not "1"
MAX_NAME = 100
PROJECT_FILE = ".localmem.json"
MAX_FILE_BYTES = 64 * 1024
_REMOTE_SECTION = re.compile(r'^\s*\[\s*remote\s+"([^"]*)"\s*\]\s*$')
_SECTION = re.compile(r"^\s*\[")
_URL = re.compile(r"^\s*url\s*=\s*(.+?)\s*$", re.IGNORECASE)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP = re.compile(r"^[^/:]+:")  # git's scp-like form, host:path (a local path has a '/' before any ':')


@dataclass(frozen=True)
class ProjectNames:
    """The names of a working directory's project: ``(name, how it was found, as written)``, primary first.

    ``explicit``: the name came from the setting or the project file, and no other is tried.
    """
    root: str | None
    names: tuple[tuple[str, str, str], ...]
    explicit: bool = False
    found: str = ""  # how ``root`` was found, in words (``hooks status``, ``hook -v``)
    exists: bool = True  # False: the folder was deleted (the session's earlier project is used: events)

    @property
    def primary(self) -> str | None:
        return self.names[0][0] if self.names else None


class Checkout(NamedTuple):  # a tuple: built on every prompt, and cheaper so than a frozen dataclass
    """Where a working directory's project lives: ``root`` names it (a checkout's top, else the folder
    itself); ``config`` is the git config whose remote names it too; ``main`` a worktree's main repository
    folder (its name is the project's); ``how``: how it was found, in words."""
    root: str
    config: str | None
    main: str | None
    how: str
    exists: bool = True


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _is_link(path: str) -> bool:
    try:
        return os.path.islink(path)
    except (OSError, ValueError):
        return False


def _same(folder: str, other: str) -> bool:
    try:
        return folder == other or os.path.samefile(folder, other)
    except (OSError, ValueError):
        return False


def home_folder() -> str | None:
    """The home folder as ``~`` expands; None when that is not an absolute path."""
    home = os.environ.get("HOME") or os.path.expanduser("~")  # HOME first: as expanduser, without its checks
    return os.path.normpath(home) if os.path.isabs(home) else None


def _walk(start: str, home: str | None) -> tuple[str | None, bool]:
    """The nearest folder at or above ``start`` holding ``.git``, not past the home folder (or None), and
    whether the home folder's own checkout was passed over (it is home's project alone). Below home as
    ``~`` spells it, home is known by its path; elsewhere, where a ``.git`` is found, as the same folder
    (two stats: a home reached through a symlink, ``/home/me`` -> ``/data/me``, with ``cwd`` the real path)."""
    below_home = home is not None and (start == home or start.startswith(home.rstrip(os.sep) + os.sep))
    current = start
    for _ in range(MAX_WALK_UP):
        try:
            held = os.path.lexists(os.path.join(current, ".git"))
        except (OSError, ValueError):
            return None, False
        if held:
            passed = current != start and home is not None and (
                current == home if below_home else _same(current, home))
            return (None, True) if passed else (current, False)
        parent = os.path.dirname(current)
        if parent == current or current == home:  # nothing above home is this user's project
            return None, False
        current = parent
    return None, False


def locate(cwd: str) -> Checkout:
    """The checkout holding ``cwd`` (see the module docstring), read from the filesystem alone. A symlink is
    followed where it changes a name: the checkout it reaches (one ``lstat``), or, in no checkout, the folder
    itself; a name is the last part of a path, so a symlink further up changes none."""
    start = os.path.normpath(cwd)
    home = home_folder()
    seen: list[str] = []
    found, home_passed = _walk(start, home)
    if found is None and _is_link(start):  # a link to a folder inside a checkout: that checkout's
        real = _real(start)
        by_real = _walk(real, home)
        if by_real[0] is not None or by_real[1]:
            seen.append(f"{start} is {real} by its real path")
            (found, home_passed), start = by_real, real
    if found is not None and _is_link(found):  # the checkout itself reached through a symlink
        real = _real(found)
        seen.append(f"{found} is {real} by its real path")
        found = real
    if found is not None:
        return _checkout(found, seen)
    if not os.path.lexists(start):
        seen.append("the folder no longer exists; in no checkout that is still there: the folder's own name")
        return Checkout(start, None, None, "; ".join(seen), False)
    if home_passed:
        seen.append(f"not in a checkout of its own: the folder itself (the home folder's checkout {home} "
                    "ignored: it is home's project alone)")
    else:
        seen.append("in no checkout: the folder itself")
    return Checkout(start, None, None, "; ".join(seen))


def _checkout(root: str, seen: list[str]) -> Checkout:
    """A checkout at ``root``, its ``.git`` taken for the git folder (``git_file`` reads it when it is not)."""
    return Checkout(root, os.path.join(root, ".git", "config"), None,
                    "; ".join(seen + [f"the checkout {root} (the nearest folder holding .git)"]))


def git_file(checkout: Checkout) -> Checkout | None:
    """``checkout`` whose ``.git`` is a file naming its git folder: a worktree (named for its main repository)
    or a submodule (or a separate git folder: its own project); None when ``.git`` is not such a file."""
    root = checkout.root
    seen = checkout.how.rpartition("; ")[0]
    seen = seen + "; " if seen else ""
    dot_git = os.path.join(root, ".git")
    text = _read_bounded(dot_git, whole=False) or ""
    line = text.splitlines()[0] if text.strip() else ""
    if not line.startswith("gitdir:"):
        return None
    git_dir = os.path.normpath(os.path.join(root, line[len("gitdir:"):].strip()))
    common = (_read_bounded(os.path.join(git_dir, "commondir"), whole=False) or "").strip()
    if not common:
        return Checkout(root, os.path.join(git_dir, "config"), None,
                        f"{seen}the checkout {root} (its .git file names the git folder {git_dir})")
    common_dir = os.path.normpath(os.path.join(git_dir, common))
    main = os.path.dirname(common_dir) if os.path.basename(common_dir) == ".git" else common_dir
    return Checkout(root, os.path.join(common_dir, "config"), main,
                    f"{seen}a git worktree at {root} of the repository {main}: named for that repository")


def project_root(cwd: str) -> str:
    """The folder naming ``cwd``'s project (``locate``): a checkout's top, else ``cwd`` itself."""
    return locate(cwd).root


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
    checkout = locate(cwd)
    root = checkout.root
    from_file = read_project_file(root)
    if from_file is not None:
        return ProjectNames(root, ((from_file, f"the project file {os.path.join(root, PROJECT_FILE)}",
                                    from_file),), True, checkout.how, checkout.exists)
    config = _read_bounded(checkout.config, whole=False) if checkout.config else None
    if config is None and checkout.config and os.path.isfile(os.path.join(root, ".git")):
        checkout = git_file(checkout) or checkout  # read only where .git/config is not: the usual checkout's cost
        config = _read_bounded(checkout.config, whole=False) if checkout.config else None
    names: list[tuple[str, str, str]] = []
    named_by = checkout.main or root
    written = os.path.basename(named_by)
    if checkout.main and written.endswith(".git") and len(written) > 4:  # a bare main repository: billing.git
        written = written[:-4]
    folder = normalise(written)
    if folder:
        what = "the folder name of the main repository" if checkout.main else "the folder name of"
        names.append((folder, f"{what} {named_by}", written))
    remote = remote_repository(config) if config is not None else None
    if remote is not None and normalise(remote[0]) != folder:
        names.append((normalise(remote[0]) or "", f"the repository name of git remote {remote[1]!r}", remote[0]))
    return ProjectNames(root, tuple(names), False, checkout.how, checkout.exists)


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
    home = home_folder()
    folders = [root]
    if home and os.path.lexists(os.path.join(home, ".git")) and not _same(root, home):
        under = [folder.rstrip(os.sep) + os.sep for folder in {home, _real(home)}]
        if any(_real(root).startswith(prefix) or root.startswith(prefix) for prefix in under):
            folders.append(home)
    return all((_project_file(folder) or {}).get("capture", True) for folder in folders)


def git_remote_repository(root: str, config: str | None = None) -> tuple[str, str] | None:
    """``(repository name as written, remote)`` from ``config`` (default ``root/.git/config``):
    ``origin``'s URL, else the first."""
    text = _read_bounded(config or os.path.join(root, ".git", "config"), whole=False)
    return remote_repository(text) if text is not None else None


def remote_repository(text: str) -> tuple[str, str] | None:
    """``(repository name as written, remote)`` from a git config's text: ``origin``'s URL, else the first."""
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
    tail = repository_name(urls[remote])
    return (tail, remote) if tail and normalise(tail) else None


def repository_name(url: str) -> str | None:
    """The last part of a remote URL's path, without ``.git``; never from its user, password or host
    (``https://user:token@host/org/repo.git`` → ``repo``; ``https://user:token@host`` → None)."""
    url = re.split(r"[?#]", url.strip(), maxsplit=1)[0]
    scheme = _SCHEME.match(url)
    if scheme:  # scheme://[user[:password]@]host[:port]/path
        path = url[scheme.end():].partition("/")[2]
    elif _SCP.match(url):  # [user@]host:path
        path = url.partition(":")[2]
    else:  # a local path
        path = url
    tail = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    if tail.endswith(".git"):
        tail = tail[:-4]
    return tail or None


def project_tag(name: str) -> str:
    return f"project:{name}"
