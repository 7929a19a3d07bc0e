"""Reading a Claude Code transcript (JSONL) bounded in bytes, line length and line count.

Only a regular file of this user is read (opened without following a final
symlink and without blocking, so a FIFO or device named as the transcript is
refused, not waited on; another user's file is refused, however readable).
Reading resumes at the offset the last capture stopped at; a file now shorter
than that, or whose byte before it is not a newline, was replaced, and is read
from the start (capture's message ids keep that harmless). A line longer than
``max_line_bytes`` is skipped without being held in memory, over as many runs
as it takes: a run that stops inside such a line says where, as a negative
offset (``resume_at``), and the next run goes on skipping from there (a line
longer than one run's ``max_bytes`` is not read again from its start at every
run). A line that is not JSON, nests too deep, or is not an object is skipped;
each skip is counted by reason. An unfinished last line (the client still
writing it) is left for the next run.
"""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from typing import Any, Generator, Iterator

from ..errors import ValidationError

CHUNK = 64 * 1024
MAX_PATH = 4096


def check_transcript_path(path: Any) -> str:
    if not isinstance(path, str) or not path.strip():
        raise ValidationError("'transcript_path' must be a non-empty string")
    if "\x00" in path or len(path) > MAX_PATH:
        raise ValidationError("'transcript_path' is not a usable path (NUL or over 4096 characters)")
    if not os.path.isabs(path):
        raise ValidationError(f"'transcript_path' must be an absolute path, got {path!r}")
    return path


class TranscriptRead:
    """One bounded pass over a transcript from ``offset``; iterate for ``(entry, end_offset)``.

    ``offset``: where the last run stopped; negative, inside an overlong line at ``-offset``.
    After iterating: ``end_offset`` is the byte the next run should start at, ``resume_at``
    the offset to save for it (``-end_offset`` when that is inside an overlong line),
    ``restarted`` whether the saved offset was dropped, ``skipped`` counts
    lines skipped by reason, ``lines`` the lines read, ``more`` whether a bound
    stopped the pass before the end of the file.
    """

    def __init__(self, path: str, offset: int, *, max_bytes: int, max_line_bytes: int,
                 max_lines: int) -> None:
        self.path = check_transcript_path(path)
        self.max_bytes, self.max_line_bytes, self.max_lines = max_bytes, max_line_bytes, max_lines
        self.skipped: Counter[str] = Counter()
        self.lines = 0
        self.more = False
        self.restarted = False
        self.inside_overlong = offset < 0  # the last run stopped inside a line too long to keep
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
        try:
            self._fd = os.open(path, flags)
        except OSError as exc:
            raise ValidationError(f"'transcript_path' cannot be opened: {exc.strerror} ({path})") from None
        try:
            info = os.fstat(self._fd)
            if not stat.S_ISREG(info.st_mode):
                raise ValidationError(f"'transcript_path' is not a regular file ({path})")
            if hasattr(os, "geteuid") and info.st_uid != os.geteuid():  # another user's words are not ours to keep
                raise ValidationError(f"'transcript_path' belongs to another user (uid {info.st_uid}), "
                                      f"not read ({path})")
            self.size = info.st_size
            self.start = self._usable_offset(offset)
        except BaseException:
            os.close(self._fd)
            raise
        self.end_offset = self.start

    @property
    def resume_at(self) -> int:
        return -self.end_offset if self.inside_overlong else self.end_offset

    def _usable_offset(self, offset: int) -> int:
        if offset < 0:  # inside an overlong line: no newline before it to check
            if -offset > self.size:
                self.restarted, self.inside_overlong = True, False
                return 0
            return -offset
        if offset == 0:
            return 0
        if offset > self.size or os.pread(self._fd, 1, offset - 1) != b"\n":
            self.restarted = True
            return 0
        return offset

    def __iter__(self) -> Generator[tuple[dict[str, Any], int], None, None]:
        try:
            yield from self._entries()
        finally:
            os.close(self._fd)

    def _entries(self) -> Iterator[tuple[dict[str, Any], int]]:
        position = self.start  # file offset of the first byte of `pending`
        pending = b""
        overlong = self.inside_overlong  # inside a line being skipped for its length
        read_total = 0
        while True:
            if read_total >= self.max_bytes or self.lines >= self.max_lines:
                self.more = True
                break
            chunk = os.pread(self._fd, min(CHUNK, self.max_bytes - read_total), position + len(pending))
            if not chunk:
                break
            read_total += len(chunk)
            pending += chunk
            while True:
                newline = pending.find(b"\n")
                if newline < 0:
                    if len(pending) > self.max_line_bytes:
                        # Drop what is held of an overlong line; remember we are inside it.
                        position += len(pending)
                        pending = b""
                        overlong = True
                    break
                line, pending = pending[:newline], pending[newline + 1:]
                position += newline + 1
                if overlong or len(line) > self.max_line_bytes:
                    overlong = self.inside_overlong = False
                    self.skipped["line_too_long"] += 1
                    self.lines += 1
                    self.end_offset = position
                    continue
                self.lines += 1
                entry = self._parse(line)
                self.end_offset = position
                if entry is not None:
                    yield entry, position
                if self.lines >= self.max_lines:
                    break
        if overlong:  # unfinished here: the next run goes on skipping it from where this one stopped
            self.end_offset, self.inside_overlong = position + len(pending), True
            self.skipped["line_too_long_unfinished"] += 1
            return
        if pending and not self.more:
            # A last line without its newline: taken only if it is already a whole object.
            entry = self._parse(pending, count=False)
            if entry is not None:
                self.lines += 1
                self.end_offset = position + len(pending)
                yield entry, self.end_offset

    def _parse(self, line: bytes, *, count: bool = True) -> dict[str, Any] | None:
        if not line.strip():
            return None
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            if count:
                self.skipped["not_utf8"] += 1
            return None
        try:
            entry = json.loads(text)
        except RecursionError:
            if count:
                self.skipped["nested_too_deep"] += 1
            return None
        except ValueError:
            if count:
                self.skipped["not_json"] += 1
            return None
        if not isinstance(entry, dict):
            if count:
                self.skipped["not_an_object"] += 1
            return None
        return entry
