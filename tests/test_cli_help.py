"""The CLI as a newcomer reads it: help texts (global options once, every option described),
shell completion generated from the parser, ``localmem version``, and counts in good grammar."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore
from localmem.cli import main
from localmem.cli.parser import build_parser

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "100")


def env() -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("LOCALMEM_") or k == "LOCALMEM_DAEMON"}
    base["PYTHONPATH"] = str(REPO) + (os.pathsep + base["PYTHONPATH"] if base.get("PYTHONPATH") else "")
    return base


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "localmem", *args], capture_output=True, text=True,
                          env=env(), timeout=120, check=False)


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def help_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    capsys.readouterr()
    assert main([*args, "--help"]) == 0
    return capsys.readouterr().out


# -- help ---------------------------------------------------------------------------------------


def test_global_options_are_described_once(capsys) -> None:
    top = help_of(capsys)
    assert "global options:" in top and "$XDG_DATA_HOME" in top and "--color" in top
    for name in commands():
        text = help_of(capsys, name)
        assert "$XDG_DATA_HOME" not in text and "global options:" not in text, name
        assert "--db" not in text.split("\n\n")[0], name  # not in the usage line either
        assert "see 'localmem --help'" in " ".join(text.split()), name
        assert len(text.splitlines()) < 45, name


def test_the_global_options_still_work_after_the_command(tmp_path: Path, capsys) -> None:
    db = tmp_path / "memory.db"
    assert main(["store", "hello there", "--db", str(db), "--embedder", "hash", "--json", "--color", "never"]) == 0
    assert json.loads(capsys.readouterr().out)["memory"]["content"] == "hello there"


def test_every_option_and_argument_is_described() -> None:
    undescribed = []
    for name, sub in commands().items():
        for action in sub._actions:
            if action.help == argparse.SUPPRESS and action.dest in ("db", "embedder", "json", "color"):
                continue  # the global options, described in 'localmem --help'
            if not action.help or not action.help.strip():
                undescribed.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
    assert undescribed == []


# -- completion -------------------------------------------------------------------------------


def completion(shell: str) -> str:
    result = run("completion", shell)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_cover_every_command_and_option(shell: str) -> None:
    script = completion(shell)
    for name, sub in commands().items():
        assert name in script, name
        for action in sub._actions:
            for flag in action.option_strings:
                if flag.startswith("--"):
                    assert (flag if shell != "fish" else f"-l {flag[2:]}") in script, (name, flag)
    if shutil.which(shell) and shell != "bash":
        checked = subprocess.run([shell, "-n"], input=script, capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0, checked.stderr


BASH_DRIVER = """
source "$1"
complete_line() {
    read -r -a COMP_WORDS <<< "$2"
    [[ "$2" == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _localmem
    echo "${COMPREPLY[*]}"
}
complete_line x "localmem rec"
complete_line x "localmem list --so"
complete_line x "localmem list --sort "
complete_line x "localmem --db some.db --color "
complete_line x "localmem completion "
complete_line x "localmem --db some.db by-tag --pre"
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash")
def test_bash_completion_completes_as_a_user_types(tmp_path: Path) -> None:
    script = tmp_path / "localmem.bash"
    script.write_text(completion("bash"))
    result = subprocess.run(["bash", "-c", BASH_DRIVER, "driver", str(script)], capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "recall", "--sort", "time_desc time_asc updated_desc updated_asc importance accessed",
        "auto always never", "bash zsh fish", "--prefix"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish")
def test_fish_completion_completes_values(tmp_path: Path) -> None:
    script = tmp_path / "localmem.fish"
    script.write_text(completion("fish"))
    result = subprocess.run(["fish", "-c", f"source {script}; complete -C 'localmem recall --sort '"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == sorted(
        ["score", "time_desc", "time_asc", "updated_desc", "updated_asc"])


# -- version ----------------------------------------------------------------------------------


def test_version_names_every_component_and_the_schema(tmp_path: Path) -> None:
    import apsw

    db = tmp_path / "memory.db"
    MemoryStore(db, embedder="hash").close()
    result = run("--db", str(db), "version")
    assert result.returncode == 0, result.stderr
    rows = dict(line.split(None, 1) for line in result.stdout.splitlines())
    assert set(rows) == {"localmem", "python", "sqlite", "sqlite-vec", "apsw", "extras", "database"}
    assert rows["sqlite"] == apsw.sqlite_lib_version() and rows["apsw"] == apsw.apswversion()
    assert rows["sqlite-vec"][0].isdigit() and rows["python"].startswith(sys.version.split()[0])
    body = json.loads(run("--db", str(db), "version", "--json").stdout)
    assert body["database"]["schema_version"] == body["database"]["latest_schema_version"] >= 1
    assert "mcp" in body["extras"] and "server" in body["extras"]


def test_version_never_creates_or_migrates_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "memory.db"
    result = run("--db", str(missing), "version")
    assert result.returncode == 0, result.stderr
    assert "(no file yet)" in result.stdout and not missing.parent.exists()


# -- counts read as English -------------------------------------------------------------------


def test_counts_agree_with_their_nouns(tmp_path: Path, capsys) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(source, embedder="hash") as store:
        first = store.store("one memory")
        second = store.store("another memory")
        store.associate(first, second)
    exported = tmp_path / "out.jsonl"
    capsys.readouterr()
    assert main(["--db", str(source), "export", str(exported)]) == 0
    assert capsys.readouterr().out.startswith("exported 2 memories and 1 edge to ")
    assert main(["--db", str(target), "--embedder", "hash", "import", str(exported)]) == 0
    assert capsys.readouterr().out.startswith("imported 2 memories and 1 edge (memories: 2 created; edges: 1")
    assert main(["--db", str(target), "recall", "one memory", "--limit", "1"]) == 0
    assert "(1 result;" in capsys.readouterr().out
