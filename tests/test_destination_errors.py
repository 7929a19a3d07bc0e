"""A destination that cannot be written is named as the user gave it (issue 12, item 11).

Found by ``benchmarks/attacks/attacks.py``: ``backup`` and ``export`` into a folder that
is a file, or onto read-only media, reported their temporary file
(``Not a directory: afile/.x.db.<pid>.tmp``) as the issue's "backup to a
directory" did, because removing the stale temporary name failed first.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from localmem import MemoryStore
from tests.test_file_safety import assert_refused, leftovers, localmem


def refusals(tmp_path: Path, dest_dir: str) -> None:
    for command, name in (("backup", "x.db"), ("export", "x.jsonl")):
        for extra in ([], ["--force"]) if command == "backup" else ([],):
            result = localmem("--db", "w.db", command, f"{dest_dir}/{name}", *extra, cwd=tmp_path)
            assert_refused(result, f"{dest_dir}/{name}")
            assert ".tmp" not in result.stderr, result.stderr
            assert len(result.stderr.splitlines()) == 1, result.stderr


def test_a_destination_under_a_file_is_named(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store("backed up")
    (tmp_path / "afile").write_text("a file, not a folder")
    refusals(tmp_path, "afile")
    assert leftovers(tmp_path) == []
    assert (tmp_path / "afile").read_text() == "a file, not a folder"


def test_a_destination_on_read_only_media_is_named(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "w.db", embedder="hash") as store:
        store.store("backed up")
    media = tmp_path / "ro"
    media.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make read-only media")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m,ro", "tmpfs", str(media)],
                          capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs to make read-only media: {made.stderr.strip()}")
    try:
        refusals(tmp_path, "ro")
        assert list(media.iterdir()) == []
    finally:
        if subprocess.run(["umount", str(media)], capture_output=True, check=False).returncode:
            subprocess.run(["umount", "-l", str(media)], capture_output=True, check=False)
    assert leftovers(tmp_path) == []
