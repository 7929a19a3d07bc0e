"""How ``localmem hook`` finds a running server for its store: the discovery note.

``localmem serve`` (and ``localmem ui``) write, once listening, a small JSON
note for their store in a per-user runtime folder (``$XDG_RUNTIME_DIR/localmem``,
else ``$XDG_CACHE_HOME/localmem/run`` or ``~/.cache/localmem/run``; folder
0700, note 0600), named by a hash of the store's real path. A hook looks there,
then in ``/run/user/UID/localmem`` and the cache folder (a server started from
another environment of the same user). It holds the
server's pid, a loopback address and port, and a random secret for this run
that the ``POST /hooks/{event}`` route asks for, so only someone who can read
the note (this user) can call the route. The server removes its note when it
stops. A note whose pid is gone is stale, and ignored.

The reader trusts nothing it did not make itself: a symlink, a file or folder
owned by another user or open to others, a file with more than one link, a
malformed note, or one that points anywhere but loopback is refused, with the
reason. Standard library only: the hook client imports this on every prompt.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat

from ..paths import make_folders, private_folder_problem

__all__ = ["MAX_NOTE_BYTES", "Note", "NoteRefused", "StaleNote", "listener_owner", "loopback_literal", "note_path", "read_note",
           "remove_note", "runtime_dir", "store_key", "supported", "write_note"]

NOTE_VERSION = 1
MAX_NOTE_BYTES = 4096
_LOOPBACK_V4 = re.compile(r"127\.(?:25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})(?:\.(?:25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})){2}")
_SECRET = re.compile(r"[0-9a-f]{32,128}")


class NoteRefused(Exception):
    """A note (or its folder) that must not be trusted; the message says why."""


class StaleNote(Exception):
    """A note left by a server that is gone (its pid no longer runs)."""


class Note:
    """A running server's address for one store (a plain class: ``dataclasses`` costs the hook
    tens of milliseconds of import on every prompt)."""

    __slots__ = ("pid", "host", "port", "secret", "store", "path")

    def __init__(self, *, pid: int, host: str, port: int, secret: str, store: str, path: str) -> None:
        self.pid, self.host, self.port, self.secret, self.store, self.path = pid, host, port, secret, store, path

    def __repr__(self) -> str:
        return f"Note(pid={self.pid}, host={self.host!r}, port={self.port}, store={self.store!r})"


def supported() -> bool:
    """Whether this system can keep a note private and check its owner (POSIX); elsewhere hooks
    answer in-process and servers publish nothing."""
    return hasattr(os, "geteuid") and hasattr(os, "O_NOFOLLOW")


def loopback_literal(host: object) -> bool:
    """A loopback address written as digits (127.x.y.z or ::1): never a name to resolve."""
    return isinstance(host, str) and (host == "::1" or _LOOPBACK_V4.fullmatch(host) is not None)


def runtime_dir(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """The per-user folder where a server writes its note (see the module docstring)."""
    env = os.environ if environ is None else environ
    runtime = (env.get("XDG_RUNTIME_DIR") or "").strip()
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "localmem")
    return _cache_folder(env)


def _cache_folder(env: dict[str, str] | os._Environ[str]) -> str:
    cache = (env.get("XDG_CACHE_HOME") or "").strip()
    if not cache or not os.path.isabs(cache):
        cache = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "localmem", "run")


def _reader_folders(environ: dict[str, str] | os._Environ[str] | None = None) -> list[str]:
    """Where a reader looks, in order: its own writer's folder, then where a server started from
    another environment of this user would write (a login session has ``$XDG_RUNTIME_DIR``,
    ``/run/user/UID``; a cron job or an assistant started without it falls back to the cache)."""
    env = os.environ if environ is None else environ
    folders = [runtime_dir(env)]
    standard = f"/run/user/{os.geteuid()}" if hasattr(os, "geteuid") else ""
    if standard and os.path.isdir(standard):
        folders.append(os.path.join(standard, "localmem"))
    folders.append(_cache_folder(env))
    return list(dict.fromkeys(folders))


def store_key(store_path: str) -> str:
    """The store's real path: one name however the path was spelt (symlinks, ``~``, ``..``)."""
    return os.path.realpath(os.path.expanduser(store_path))


def note_path(store_path: str, environ: dict[str, str] | None = None) -> str:
    digest = hashlib.sha256(store_key(store_path).encode("utf-8", "surrogateescape")).hexdigest()
    return os.path.join(runtime_dir(environ), f"{digest[:32]}.json")


def _check_folder(folder: str, *, fix: bool) -> None:
    """The folder must be a real directory of this user, closed to others (0700)."""
    problem = private_folder_problem(folder)
    if problem is None:
        return
    reason, only_mode = problem
    if not (fix and only_mode):
        raise NoteRefused(reason + ("; expected 700" if only_mode else ""))
    os.chmod(folder, 0o700)


def write_note(store_path: str, *, host: str, port: int, secret: str) -> str:
    """Publish this process as the server of ``store_path``; returns the note's path.

    Written to a private temporary file and renamed into place, so a reader
    sees the old note or the new one, never half of one. Raises ``NoteRefused``
    (folder not ours) or ``OSError``.
    """
    if not loopback_literal(host):
        raise NoteRefused(f"a note names only a loopback address, not {host!r}")
    path = note_path(store_path)
    folder = os.path.dirname(path)
    make_folders(os.path.dirname(folder))  # ~/.cache, say: not group-writable under umask 002
    os.makedirs(folder, mode=0o700, exist_ok=True)
    _check_folder(folder, fix=True)
    body = json.dumps({"version": NOTE_VERSION, "pid": os.getpid(), "host": host, "port": int(port),
                       "secret": secret, "store": store_key(store_path)}).encode("utf-8")
    replace_file(path, body, 0o600)
    return path


def replace_file(path: str, body: bytes, mode: int) -> None:
    """Write ``body`` to a new file beside ``path`` (created with ``mode``, never through a
    symlink) and rename it over ``path``: a reader sees the old file or the new one. The
    temporary file is removed when anything fails."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.localmem-{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.chmod(temporary, mode)  # the umask may have narrowed it
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def remove_note(store_path: str, secret: str) -> bool:
    """Remove the note if it is still this run's (another server may have replaced it)."""
    try:
        note = read_note(store_path, check_pid=False)
    except (NoteRefused, OSError):
        return False
    if note is None or note.secret != secret:
        return False
    try:
        os.unlink(note.path)
    except OSError:
        return False
    return True


def _load(path: str) -> dict:
    """The note's JSON, read without following a symlink, from a file only this user can touch."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if exc.errno == errno.ELOOP:
            raise NoteRefused(f"{path} is a symlink") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NoteRefused(f"{path} is not a regular file")
        if info.st_uid != os.geteuid():
            raise NoteRefused(f"{path} belongs to uid {info.st_uid}, not to this user")
        if info.st_mode & 0o077:
            raise NoteRefused(f"{path} is readable or writable by other users "
                              f"(mode {stat.S_IMODE(info.st_mode):o}; expected 600)")
        if info.st_nlink != 1:
            raise NoteRefused(f"{path} has {info.st_nlink} links (expected 1)")
        raw = handle.read(MAX_NOTE_BYTES + 1)
    if len(raw) > MAX_NOTE_BYTES:
        raise NoteRefused(f"{path} is larger than {MAX_NOTE_BYTES} bytes")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise NoteRefused(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise NoteRefused(f"{path} is not a JSON object")
    return data


def read_note(store_path: str, *, check_pid: bool = True) -> Note | None:
    """The running server of ``store_path``, or None when there is no note.

    Looks in each folder a server of this user may have written to (``_reader_folders``); the
    first live note wins. Raises ``StaleNote`` when only notes of servers that are gone were
    found, ``NoteRefused`` for a note (or folder) that must not be trusted.
    """
    name = os.path.basename(note_path(store_path))
    stale: StaleNote | None = None
    for folder in _reader_folders():
        try:
            return _read_one(os.path.join(folder, name), store_path, check_pid)
        except FileNotFoundError:
            continue
        except StaleNote as exc:
            stale = stale or exc
    if stale is not None:
        raise stale
    return None


def _read_one(path: str, store_path: str, check_pid: bool) -> Note:
    _check_folder(os.path.dirname(path), fix=False)
    data = _load(path)
    pid, host, port, secret = data.get("pid"), data.get("host"), data.get("port"), data.get("secret")
    if data.get("version") != NOTE_VERSION:
        raise NoteRefused(f"{path}: unknown note version {data.get('version')!r}")
    if type(pid) is not int or pid <= 0:
        raise NoteRefused(f"{path}: pid must be a positive integer")
    if not loopback_literal(host):
        raise NoteRefused(f"{path}: host {host!r} is not a loopback address")
    if type(port) is not int or not 0 < port < 65536:
        raise NoteRefused(f"{path}: port must be an integer from 1 to 65535")
    if not isinstance(secret, str) or not _SECRET.fullmatch(secret):
        raise NoteRefused(f"{path}: the secret must be 32 to 128 lowercase hex digits")
    if data.get("store") != store_key(store_path):
        raise NoteRefused(f"{path} names another store ({data.get('store')!r})")
    if check_pid and not _alive(pid):
        raise StaleNote(f"{path} names pid {pid}, which no longer runs")
    return Note(pid=pid, host=host, port=port, secret=secret, store=data["store"], path=path)


MAX_PROC_NET_BYTES = 4 * 1024 * 1024


def listener_owner(host: str, port: int) -> int | None:
    """The uid that owns the socket listening on ``host:port`` (Linux ``/proc/net/tcp*``), or None
    when it cannot be told (no such file, no such listener).

    A note outlives a server killed without its shutdown; if another user then took the port,
    the hook would hand that user the prompt. The kernel says whose the listener is.
    """
    if ":" in host:
        files, exact, wildcard = ("/proc/net/tcp6",), "00000000000000000000000001000000", "0" * 32
    else:
        octets = [int(part) for part in host.split(".")]
        exact = "".join(f"{octet:02X}" for octet in reversed(octets))  # little-endian, as the kernel prints
        files, wildcard = ("/proc/net/tcp", "/proc/net/tcp6"), "00000000"
    wanted = f"{port:04X}"
    found: dict[str, int] = {}
    for name in files:
        try:
            with open(name, "rb") as handle:
                text = handle.read(MAX_PROC_NET_BYTES).decode("ascii", "replace")
        except OSError:
            continue
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 8 or fields[3] != "0A":  # 0A: LISTEN
                continue
            address, _, listening_port = fields[1].partition(":")
            if listening_port != wanted or not fields[7].isdigit():
                continue
            if address == exact:
                return int(fields[7])  # the socket a connection to host:port reaches
            if address in (wildcard, "0" * 32):
                found.setdefault("wildcard", int(fields[7]))
        # Each file costs the kernel a walk over every socket (milliseconds): the IPv6 table
        # (a dual-stack wildcard listener) is read only when the IPv4 one had no exact match.
    return found.get("wildcard")


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a process of this user (another user's pid is a reused number)."""
    try:
        os.kill(pid, 0)
    except OSError:  # ProcessLookupError: gone; PermissionError: another user's process
        return False
    return True
