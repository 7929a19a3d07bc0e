"""What another user of the same machine can read or change of a localmem user's store: the
folders localmem makes for an assistant's hook settings, and the loopback HTTP server (any
local user can connect to 127.0.0.1). Real subprocesses; the second-user checks need root
(they switch a child process to another uid) and skip otherwise."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from serving import stop, wait_until_healthy
from test_serve_start import env, free_port, start

REPO = Path(__file__).resolve().parents[1]
STRANGER = 65534  # nobody


def hooks_cli(home: Path, *args: str, umask: int) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALMEM_", "XDG_"))}
    environ.update(PYTHONPATH=str(REPO), HOME=str(home))
    return subprocess.run([sys.executable, "-m", "localmem", *args], env=environ, capture_output=True, text=True,
                          timeout=60, cwd=home, preexec_fn=lambda: os.umask(umask))


def test_hooks_install_under_umask_002_makes_no_folder_others_can_write(tmp_path: Path) -> None:
    # The settings file holds commands the assistant runs as this user: a folder of it that a
    # group can write lets a member of the group swap the file (rename) and run code as the user.
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    project = tmp_path / "project"
    project.mkdir(mode=0o755)
    for args in (["--user"], ["--project", str(project)]):
        result = hooks_cli(home, "hooks", "install", "claude-code", *args, "--write", umask=0o002)
        assert result.returncode == 0, result.stderr
    for folder in (home / ".claude", project / ".claude"):
        for path in (folder, folder / "settings.json"):
            mode = stat.S_IMODE(path.stat().st_mode)
            assert not mode & 0o022, f"{path} is {mode:o}"


def test_a_server_without_a_token_says_that_every_local_user_can_use_it(tmp_path: Path) -> None:
    port = free_port()
    process = start(tmp_path / "m.db", "serve", "--port", str(port), "--log-level", "warning")
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}")
    finally:
        stop(process)
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert "without a token: every user of this machine can read and change this store" in stderr, stderr
    assert "LOCALMEM_API_TOKEN" in stderr

    port = free_port()
    process = start(tmp_path / "m.db", "serve", "--port", str(port), "--log-level", "warning",
                    LOCALMEM_API_TOKEN="a-token-for-the-test")
    try:
        wait_until_healthy(process, f"http://127.0.0.1:{port}")
    finally:
        stop(process)
    assert "every user of this machine" not in (process.stderr.read().decode() if process.stderr else "")


STRANGER_CLIENT = textwrap.dedent("""
    import os, socket, sys
    os.setgid({uid}); os.setuid({uid})
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("127.0.0.1", {port}))
    s.sendall(b"GET /recall?query=pin HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n")
    print(s.recv(64).split(b"\\r\\n")[0].decode())
""")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="switching to another uid needs root")
def test_another_local_user_is_kept_out_by_the_token_and_only_by_it(tmp_path: Path) -> None:
    # What the start-up line says, seen from a second uid: without a token it reads the store.
    for token in ("", "a-token-for-the-test"):
        port = free_port()
        extra = {"LOCALMEM_API_TOKEN": token} if token else {}
        process = start(tmp_path / "m.db", "serve", "--port", str(port), "--log-level", "warning", **extra)
        try:
            wait_until_healthy(process, f"http://127.0.0.1:{port}")
            seen = subprocess.run([sys.executable, "-c", STRANGER_CLIENT.format(uid=STRANGER, port=port)],
                                  capture_output=True, text=True, timeout=30, env=env())
        finally:
            stop(process)
        assert seen.returncode == 0, seen.stderr
        assert seen.stdout.strip() == ("HTTP/1.1 401 Unauthorized" if token else "HTTP/1.1 200 OK"), seen.stdout


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another uid needs root")
@pytest.mark.parametrize("planted", ["shared.db", "shared.db-wal", "shared.db-journal"])
def test_a_database_file_of_another_user_is_not_written_to(tmp_path: Path, planted: str) -> None:
    # A store kept in a shared folder (LOCALMEM_DB=/tmp/…/shared.db, a sticky /tmp): another user
    # creates the file (or its -wal or -journal, where SQLite writes pages before they reach the
    # file) first, open to everyone, and would read every memory written there.
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o1777)
    os.chmod(folder, 0o1777)
    trap = folder / planted
    trap.touch()
    os.chmod(trap, 0o666)
    os.chown(trap, STRANGER, STRANGER)
    result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(folder / "shared.db"), "--embedder",
                             "hash", "store", "the key under the mat"], env={**env(), "LOCALMEM_DAEMON": "0"},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert f"{trap} belongs to uid {STRANGER}" in result.stderr, result.stderr
    assert trap.stat().st_uid == STRANGER and b"under the mat" not in trap.read_bytes()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another uid needs root")
def test_root_still_opens_a_user_s_store_in_that_user_s_own_folder(tmp_path: Path) -> None:
    # Root opening a user's store (an admin's backup, a container's root on a mounted volume): the
    # files are another uid's, but only that uid writes in the folder, so no stranger planted them.
    from localmem import MemoryStore

    folder = tmp_path / "alice"
    folder.mkdir(mode=0o700)
    with MemoryStore(str(folder / "m.db"), embedder="hash") as store:
        store.store("alice's note")
    for path in (folder, *folder.iterdir()):
        os.chown(path, STRANGER, STRANGER)
    result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(folder / "m.db"), "--embedder",
                             "hash", "store", "root's note"], env={**env(), "LOCALMEM_DAEMON": "0"},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    with MemoryStore(str(folder / "m.db"), embedder="hash") as store:
        assert store.health()["memory_count"] == 2


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="giving a file to another uid needs root")
def test_a_backup_into_a_shared_folder_does_not_write_into_a_temporary_file_another_user_planted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The backup's temporary name (.NAME.PID.tmp) can be guessed. Another user who creates it
    # between the backup's unlink and its create (a sticky /tmp: the unlink of that user's file
    # fails for anyone but root, so here the race is played by the unlink itself) got the copy.
    from localmem import MemoryStore
    from localmem.maintenance import backup

    with MemoryStore(str(tmp_path / "mine.db"), embedder="hash") as store:
        store.store("the key under the mat")
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o1777)

    def planted_after_unlink(path: Path) -> None:
        real_remove(path)
        if path.name.endswith(".tmp") and not path.exists() and not planted:
            path.touch()
            os.chmod(path, 0o666)
            os.chown(path, STRANGER, STRANGER)
            planted.append(path)

    real_remove, planted = backup.remove_database_files, []
    monkeypatch.setattr(backup, "remove_database_files", planted_after_unlink)
    with pytest.raises(Exception, match=f"belongs to uid {STRANGER}"):
        backup.backup_database(str(tmp_path / "mine.db"), str(folder / "copy.db"))
    assert planted and not (folder / "copy.db").exists()
    for path in planted:
        assert not path.exists() or b"under the mat" not in path.read_bytes()


def test_cache_folders_made_under_umask_002_are_not_group_writable(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # A server's discovery note falls back to ~/.cache/localmem/run (no $XDG_RUNTIME_DIR), the ONNX
    # export to ~/.cache/localmem/onnx: a ~/.cache made 0775 let the group swap the model.
    from localmem.embedders.onnx_cache import file_lock, onnx_root
    from localmem.hooks.discovery import remove_note, write_note

    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_RUNTIME_DIR", "XDG_CACHE_HOME", "LOCALMEM_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    old = os.umask(0o002)
    try:
        note = write_note(str(tmp_path / "m.db"), host="127.0.0.1", port=8001, secret="0" * 32)
        with file_lock(onnx_root() / "some-model.lock", wait=True):
            pass
    finally:
        os.umask(old)
    remove_note(str(tmp_path / "m.db"), "0" * 32)
    made = [home / ".cache", home / ".cache" / "localmem", Path(note).parent, onnx_root()]
    assert {stat.S_IMODE(p.stat().st_mode) & 0o022 for p in made} == {0}, \
        {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in made}
