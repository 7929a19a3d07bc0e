"""Checked import chunks parked in an anonymous temporary file until they are written (importer.py)."""

from __future__ import annotations

import os
import pickle
import tempfile
from collections.abc import Iterator
from typing import Any

from ..storage.database import MEMORY_PATH


class Spool:
    """Checked chunks parked in an anonymous temporary file until they are written.

    The file sits beside the database when it can (the data stays on its
    disk, out of a shared /tmp), is unlinked at once and private to this
    process, and holds only what this process wrote: so pickle is safe here.
    """

    def __init__(self, database: str) -> None:
        folder = None if database == MEMORY_PATH else os.path.dirname(os.path.abspath(database))
        try:
            self._file = tempfile.TemporaryFile(prefix=".localmem-import-", dir=folder)
        except OSError:  # a folder we may not write in: the system's temporary folder
            self._file = tempfile.TemporaryFile(prefix="localmem-import-")
        self._chunks = 0

    def append(self, chunk: list[Any]) -> None:
        pickle.dump(chunk, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._chunks += 1

    def __iter__(self) -> Iterator[list[Any]]:
        self._file.flush()
        self._file.seek(0)
        for _ in range(self._chunks):
            yield pickle.load(self._file)
        self._file.seek(0, 2)

    def close(self) -> None:
        self._file.close()
