"""The warm process in tests: a private runtime folder with a short path, commands run as a user
runs them (subprocesses), and every warm process a test started stopped at its end."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


class Warm:
    """One test's runtime folder, store and environment (the warm process turned on)."""

    def __init__(self, db: Path) -> None:
        # A short folder: a Unix socket's path is at most 107 bytes, and pytest's are long.
        self.runtime = Path(tempfile.mkdtemp(prefix="lmd-", dir="/tmp"))
        os.chmod(self.runtime, 0o700)
        self.db = db
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("LOCALMEM_HOOK_") and k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER")}
        self.env.update({"XDG_RUNTIME_DIR": str(self.runtime), "LOCALMEM_DAEMON": "1", "LOCALMEM_EMBEDDER": "hash",
                         "LOCALMEM_DB": str(db), "PYTHONPATH": str(REPO), "PYTHONIOENCODING": "utf-8",
                         "LOCALMEM_HOOK_DEADLINE": "60", "COLUMNS": "120"})
        self.env.pop("NO_COLOR", None)

    @property
    def folder(self) -> Path:
        return self.runtime / "localmem"

    def localmem(self, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "localmem", *args], input=stdin, capture_output=True,
                              text=True, encoding="utf-8", env={**self.env, **env}, timeout=120, check=False)

    def hook(self, event: str, payload: dict[str, Any], *args: str, **env: str) -> tuple[dict | None, str]:
        proc = self.localmem("hook", event, "-v", *args, stdin=json.dumps(payload), **env)
        assert proc.returncode == 0, proc.stderr
        return (json.loads(proc.stdout) if proc.stdout.strip() else None), proc.stderr

    def status(self) -> dict[str, Any]:
        proc = self.localmem("daemon", "status", "--json")
        return json.loads(proc.stdout)

    def start(self, *args: str) -> dict[str, Any]:
        proc = self.localmem("daemon", "start", "--json", *args)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def wait_running(self, seconds: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            status = self.status()
            if status.get("running"):
                return status
            time.sleep(0.1)
        raise AssertionError(f"no warm process answered within {seconds} s: {self.logs()}")

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in self.folder.glob("*.log")) if self.folder.is_dir() else ""

    def pids(self) -> list[int]:
        """The warm processes this test's folder has seen (each writes its pid to the lock file)."""
        found = []
        for lock in self.folder.glob("*.lock") if self.folder.is_dir() else ():
            text = lock.read_text().strip()
            if text.isdigit():
                found.append(int(text))
        return found

    def serving(self) -> list[int]:
        """The warm processes of this test's store: started by this test (by its commands)."""
        found = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as handle:
                        words = handle.read().split(b"\0")
                except OSError:
                    continue
                if b"localmem.daemon_server" in words and os.fsencode(str(self.db.resolve())) in words:
                    found.append(int(entry))
        return found

    def stocked(self, *contents: str) -> Warm:
        """This store with ``contents`` stored in-process (no warm process started by it)."""
        for content in contents:
            stored = self.localmem("store", content, LOCALMEM_DAEMON="0")
            assert stored.returncode == 0, stored.stderr
        return self

    def close(self) -> None:
        # A client may have started one a moment ago (after answering in-process): look twice.
        for _ in range(2):
            for pid in set(self.pids() + self.serving()):
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
        shutil.rmtree(self.runtime, ignore_errors=True)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (our own child, killed) is not running
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def steady(text: str) -> str:
    """Output without what differs between two runs of the same command: timings (the scores shown,
    3 decimals, do not move with the clock between two runs)."""
    return re.sub(r"\d+ ms", "N ms", text)


def steady_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: steady_json(v) for k, v in value.items()
                if k not in ("query_time_ms", "last_accessed", "timings_ms", "elapsed_ms")}
    if isinstance(value, list):
        return [steady_json(v) for v in value]
    if isinstance(value, float):  # scores decay with the clock: two runs a second apart differ at 1e-8
        return round(value, 5)
    return value
