"""Running ``localmem hook EVENT`` as Claude Code does: a subprocess, the payload on stdin."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code"
SESSION = "5d0b3c1e-8f2a-4c71-9b7e-2e4f6a1c9d30"


def hook_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL") and not k.startswith("LOCALMEM_HOOK_")}
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONIOENCODING"] = "utf-8"
    # The 2 s prompt deadline is for a person waiting; a loaded test machine is not one.
    env["LOCALMEM_HOOK_DEADLINE"] = "60"
    env.update(extra)
    return env


def hook_command(db: Path, event: str) -> list[str]:
    # --no-forward: answer in-process even if some server's discovery note were around.
    return [sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "hook", event, "--no-forward"]


def run_hook(db: Path, event: str, payload: dict[str, Any], **env: str) -> tuple[dict[str, Any] | None, str]:
    """stdout parsed as JSON (None when the hook printed nothing), and stderr."""
    proc = subprocess.run(hook_command(db, event), input=json.dumps(payload), capture_output=True, text=True,
                          encoding="utf-8", env=hook_env(**env), timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.strip()
    return (json.loads(out) if out else None), proc.stderr


def project_dir(tmp_path: Path, name: str = "orchid") -> Path:
    """A checkout named ``name`` (it holds .git); hooks run from its src/ folder."""
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def payload(kind: str, tmp_path: Path, transcript: Path | None = None, **overrides: Any) -> dict[str, Any]:
    """A recorded Claude Code payload (fixtures/claude_code/<kind>.json) pointed at files under tmp_path."""
    data = json.loads((FIXTURES / f"{kind}.json").read_text("utf-8"))
    data["cwd"] = str(project_dir_path(tmp_path) / "src")
    if transcript is not None:
        data["transcript_path"] = str(transcript)
    data.update(overrides)
    return data


def project_dir_path(tmp_path: Path) -> Path:
    root = tmp_path / "orchid"
    if not root.exists():
        project_dir(tmp_path)
    return root


def transcript_copy(tmp_path: Path) -> Path:
    target = tmp_path / f"{SESSION}.jsonl"
    shutil.copy(FIXTURES / "transcript.jsonl", target)
    return target


def fixture_entries() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / "transcript.jsonl").read_text("utf-8").splitlines()]
