"""Where the warm process of one store listens, and the checks that keep it this user's.

One folder per user: ``$XDG_RUNTIME_DIR/localmem`` (a login session's private
runtime folder), else ``/tmp/localmem-UID``. It must be a real directory of
this user closed to others (0700); the socket in it (0600), the lock file and
the log are named by a hash of the store's real path, so each store has its
own process. Anything else (a symlink, another owner, a folder others can
enter) is refused with the reason, never used and never repaired.
"""

from __future__ import annotations

import os
import stat
import sys

from ..paths import private_folder_problem

__all__ = ["MAX_SOCKET_PATH", "Refused", "Where", "check_folder", "check_socket", "daemon_folder", "enabled",
           "supported", "where"]

MAX_SOCKET_PATH = 107  # sun_path is 108 bytes on Linux, with its NUL
DISABLE_ENV = "LOCALMEM_DAEMON"
_OFF = ("0", "false", "no", "off")


class Refused(Exception):
    """The folder or socket must not be trusted (or cannot be used); the message says why."""


def supported() -> bool:
    """Unix sockets, owner checks and peer credentials (Linux)."""
    return hasattr(os, "geteuid") and hasattr(os, "O_NOFOLLOW") and hasattr(os, "fork") \
        and os.uname().sysname == "Linux"


def enabled(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Off with ``LOCALMEM_DAEMON=0`` (or false/no/off), and where it is not supported."""
    env = os.environ if environ is None else environ
    return supported() and env.get(DISABLE_ENV, "").strip().lower() not in _OFF


def daemon_folder(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    env = os.environ if environ is None else environ
    runtime = (env.get("XDG_RUNTIME_DIR") or "").strip()
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "localmem")
    return f"/tmp/localmem-{os.geteuid()}"


class Where:
    """The files of one store's warm process (a plain class: the hook imports no dataclasses)."""

    __slots__ = ("store", "folder", "socket", "lock", "log")

    def __init__(self, store: str, folder: str, key: str) -> None:
        self.store, self.folder = store, folder
        self.socket = os.path.join(folder, key + ".sock")
        self.lock = os.path.join(folder, key + ".lock")
        self.log = os.path.join(folder, key + ".log")


def where(store_path: str, environ: dict[str, str] | os._Environ[str] | None = None) -> Where:
    """The warm process's files for ``store_path`` (keyed by its real path); ``Refused`` when the
    socket's path would be too long for a Unix socket."""
    real = os.path.realpath(os.path.expanduser(store_path))
    key = _sha256_hex(real.encode("utf-8", "surrogateescape"))[:20]
    found = Where(real, daemon_folder(environ), key)
    if len(os.fsencode(found.socket)) > MAX_SOCKET_PATH:
        raise Refused(f"the socket path {found.socket} is longer than a Unix socket allows "
                      f"({MAX_SOCKET_PATH} bytes); set $XDG_RUNTIME_DIR to a shorter folder")
    return found


def _sha256_hex(data: bytes) -> str:
    """``hashlib.sha256(data).hexdigest()`` from the built-in module (``hashlib`` loads OpenSSL first: a
    hook's milliseconds); ``hashlib`` where it is not built in."""
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256
        else:
            from _sha256 import sha256
    except ImportError:  # not CPython, or built without it
        from hashlib import sha256
    return sha256(data).hexdigest()


def check_folder(folder: str, *, create: bool) -> None:
    """The folder is a real directory of this user that no one else can enter; ``create`` makes it
    (0700) when missing. ``Refused`` otherwise, ``FileNotFoundError`` when missing and not created."""
    if create:
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
    problem = private_folder_problem(folder)
    if problem is not None:
        reason, only_mode = problem
        raise Refused(f"{reason}; not used" + (" (chmod 700 it, or remove it)" if only_mode else ""))


def check_socket(path: str) -> None:
    """The socket file is a socket of this user closed to others; ``FileNotFoundError`` when absent."""
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode):
        raise Refused(f"{path} is not a socket; not used")
    if info.st_uid != os.geteuid():
        raise Refused(f"{path} belongs to uid {info.st_uid}, not to this user; not used")
    if info.st_mode & 0o077:
        raise Refused(f"{path} is open to other users (mode {stat.S_IMODE(info.st_mode):o}); not used")
