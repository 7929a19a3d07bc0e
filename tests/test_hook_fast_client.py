"""The hook command ``hooks install`` writes (``PYTHON -S .../localmem/hooks/fast_client.py ... hook
EVENT``), run through a shell as Claude Code runs it: the same answers as ``localmem hook`` through
the warm process and in-process (where it turns ``site`` on to find the store's dependencies), the
same command-line rules without argparse, and install/uninstall that know both command forms."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from daemon_helpers import Warm
from localmem.hooks import client, install

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the warm process needs Linux")

PROMPT = {"session_id": "s1", "prompt": "how do we deploy the orchid service", "cwd": "/",
          "hook_event_name": "UserPromptSubmit"}


@pytest.fixture
def warm(tmp_path: Path):
    found = Warm(tmp_path / "memory.db").stocked("deploy the orchid service with blue-green rollout", "coffee with oat milk every morning")
    yield found
    found.close()


def installed(warm: Warm, event: str) -> str:
    snippet = warm.localmem("hooks", "install", "claude-code", "--print")
    assert snippet.returncode == 0, snippet.stderr
    return json.loads(snippet.stdout)["hooks"][event][0]["hooks"][0]["command"]


def through_shell(command: str, payload: dict, env: dict[str, str], *extra: str,
                  cwd: Path | None = None) -> tuple[dict | None, str]:
    done = subprocess.run(command + "".join(f" {shlex.quote(e)}" for e in extra), shell=True, cwd=cwd,
                          input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return (json.loads(done.stdout) if done.stdout.strip() else None), done.stderr


def test_the_installed_command_answers_as_localmem_hook_does_warm_and_in_process(warm: Warm, tmp_path: Path):
    command = installed(warm, "UserPromptSubmit")
    assert shlex.split(command)[:2] == [os.path.abspath(sys.executable), "-S"]
    expected, _ = warm.hook("UserPromptSubmit", dict(PROMPT, session_id="alone"), "--no-forward")
    assert expected is not None and "blue-green rollout" in expected["hookSpecificOutput"]["additionalContext"]
    # A folder holding modules named like the standard library's: never on the fast client's path.
    (tmp_path / "json.py").write_text("raise SystemExit('the wrong json')\n")
    off, said = through_shell(command, dict(PROMPT, session_id="off"), {**warm.env, "LOCALMEM_DAEMON": "0"}, "-v",
                              cwd=tmp_path)
    assert off == expected and "from in-process" in said, said
    first, said = through_shell(command, dict(PROMPT, session_id="first"), warm.env, "-v")
    assert first == expected and "from in-process" in said and "started a warm process" in said, said
    warm.wait_running()
    through, said = through_shell(command, dict(PROMPT, session_id="warm"), warm.env, "-v")
    assert through == expected and "from the warm process" in said, said


def test_capture_events_run_through_the_installed_command(warm: Warm, tmp_path: Path):
    transcript = tmp_path / "t.jsonl"
    lines = [{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "We decided to ship the orchid release on "
                                                                      "Thursdays after the staging soak test."}}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    answer, said = through_shell(installed(warm, "Stop"), {"session_id": "s2", "cwd": str(tmp_path),
                                                           "transcript_path": str(transcript)},
                                 {**warm.env, "LOCALMEM_DAEMON": "0"}, "-v")
    assert answer is None and "1 message(s) stored" in said, said
    listed = warm.localmem("list", "--json", LOCALMEM_DAEMON="0")
    assert "Thursdays after the staging soak" in listed.stdout


@pytest.mark.parametrize("argv", [
    ["hook", "UserPromptSubmit"],
    ["--db", "/x/a.db", "hook", "Stop", "--deadline", "3.5", "-v"],
    ["--db=/x/a b.db", "--embedder", "hash", "--json", "hook", "SessionStart", "--no-forward", "--deadline=7"],
    ["hook", "--verbose", "UserPromptSubmit", "--color", "never", "--db", "/y.db"],
    ["hook", "Stop", "--embedder=hash"],
])
def test_the_quick_reading_of_the_command_line_is_argparses(argv: list[str]):
    quick = client._quick_arguments(argv)
    parsed = client._parser().parse_args(argv)
    assert quick is not None
    for name in ("event", "deadline", "forward", "verbose", "db", "embedder"):
        assert getattr(quick, name) == getattr(parsed, name), name


@pytest.mark.parametrize("argv", [
    ["hook"], ["hook", "Stop", "extra"], ["hook", "Stop", "--deadline", "soon"], ["hook", "Stop", "--dead", "3"],
    ["hook", "Stop", "--unknown"], ["hook", "Stop", "--help"], ["hook", "Stop", "--db"], ["hook", "Stop", "-v=1"],
])
def test_an_unusual_command_line_is_left_to_argparse(argv: list[str]):
    assert client._quick_arguments(argv) is None


def test_argparse_still_explains_a_bad_command_line(warm: Warm):
    command = installed(warm, "Stop")
    done = subprocess.run(command + " --deadline soon", shell=True, input="{}", capture_output=True, text=True,
                          env=warm.env, timeout=60)
    assert done.returncode == 0 and done.stdout == "" and "--deadline" in done.stderr and "soon" in done.stderr
    helped = subprocess.run(command + " --help", shell=True, capture_output=True, text=True, env=warm.env, timeout=60)
    assert helped.returncode == 0 and "Answer an assistant's hook" in helped.stdout


@pytest.mark.parametrize("name", ["", "Stop!", "Prompt Submit", "é", "a" * 65, "_x", "9x"])
def test_a_bad_event_name_is_refused(name: str):
    assert not client._is_event_name(name)


def test_install_knows_the_fast_command_and_replaces_the_older_form(tmp_path: Path):
    fast = install.hook_command("Stop", install.fast_hook_program(), str(tmp_path / "a.db"))
    older = install.hook_command("Stop", ["/venv/bin/localmem"], str(tmp_path / "a.db"))
    assert install.is_localmem_command(fast) and install.is_localmem_command(older)
    assert not install.is_localmem_command("/usr/bin/python3 -S /opt/other/hooks/fast_client.py hook Stop")
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": older}]}]}}
    updated = install.install(settings, {"Stop": fast}, tmp_path / "settings.json")
    assert [e["command"] for g in updated["hooks"]["Stop"] for e in g["hooks"]] == [fast]
    assert install.uninstall(updated, tmp_path / "settings.json") == {}


def test_doctor_says_what_the_installed_hooks_will_run(warm: Warm, tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()

    def doctor() -> str:
        done = warm.localmem("doctor", HOME=str(home))
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "hooks: none installed for Claude Code" in doctor()
    assert warm.localmem("hooks", "install", "claude-code", "--write", HOME=str(home)).returncode == 0
    said = doctor()
    assert "UserPromptSubmit" in said and "-S" in said and "(the fast command)" in said, said
    settings = home / ".claude" / "settings.json"
    older = json.loads(settings.read_text())
    for groups in older["hooks"].values():
        entry = groups[0]["hooks"][0]
        words = shlex.split(entry["command"])
        entry["command"] = shlex.join(["/nowhere/bin/localmem", *words[words.index("--db"):]])
    settings.write_text(json.dumps(older))
    said = doctor()
    assert "MISSING /nowhere/bin/localmem" in said and "hooks install claude-code --write" in said, said
    settings.write_text("{not json")
    assert "unreadable" in doctor()
