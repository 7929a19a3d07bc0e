"""What another user of the machine could read while localmem runs: memory text and queries
kept off command lines (``-`` reads them from stdin, in-process and through the warm process),
query strings kept out of the server's access log, and the push lock never opened through a
symlink."""

from __future__ import annotations

import io
import json
import logging
import sys
from pathlib import Path

import httpx
import pytest

from daemon_helpers import Warm
from localmem import MemoryStore
from localmem.cli import main
from localmem.errors import LocalMemError
from serving import stop, wait_until_healthy
from test_serve_start import free_port, start

MEMORIES = ("the cat sat on the mat by the window", "coffee with oat milk every morning",
            "deploy the orchid service with blue-green rollout")


@pytest.fixture
def warm(tmp_path: Path):
    found = Warm(tmp_path / "memory.db")
    lines = "".join(json.dumps({"content": text}) + "\n" for text in MEMORIES)
    assert found.localmem("import", "-", stdin=lines, LOCALMEM_DAEMON="0").returncode == 0
    yield found
    found.close()


def test_recall_and_forget_matching_read_dash_from_stdin_as_typed_text(warm: Warm) -> None:
    typed = warm.localmem("recall", "oat milk coffee", "--json", LOCALMEM_DAEMON="0")
    piped = warm.localmem("recall", "-", "--json", stdin="oat milk coffee\n", LOCALMEM_DAEMON="0")
    assert typed.returncode == piped.returncode == 0, piped.stderr
    ids = [[r["id"] for r in json.loads(p.stdout)["results"]] for p in (typed, piped)]
    assert ids[0] == ids[1] and ids[0], ids
    assert json.loads(piped.stdout)["query"] == "oat milk coffee"  # echo's line ending dropped
    forget_typed = warm.localmem("forget", "--matching", "ORCHID", "--dry-run", LOCALMEM_DAEMON="0")
    forget_piped = warm.localmem("forget", "--matching", "-", "--dry-run", stdin="ORCHID\n", LOCALMEM_DAEMON="0")
    assert forget_piped.returncode == 0, forget_piped.stderr
    assert forget_piped.stdout == forget_typed.stdout and "would forget 1 memory" in forget_piped.stdout


def test_recall_dash_is_answered_by_the_warm_process_as_in_process(warm: Warm) -> None:
    typed = warm.localmem("recall", "the cat on the mat", "--json", LOCALMEM_DAEMON="0")
    warm.start()
    through = warm.localmem("recall", "-", "--json", "-v", stdin="the cat on the mat\n")
    assert "answered by the warm process" in through.stderr, through.stderr
    assert through.returncode == typed.returncode == 0
    answers = [json.loads(p.stdout) for p in (typed, through)]
    assert [a["query"] for a in answers] == ["the cat on the mat"] * 2
    assert [[r["id"] for r in a["results"]] for a in answers][0] == [r["id"] for r in answers[1]["results"]]


def test_an_older_warm_process_that_ignores_stdin_is_not_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    from localmem.daemon import cli_client, client

    monkeypatch.setattr(cli_client.rundir, "enabled", lambda: True)
    monkeypatch.setattr(client, "ask", lambda *a, **k: {"code": 0, "stdout": "answer to '-'\n", "stderr": ""})
    monkeypatch.setattr(sys, "stdin", io.StringIO("the real query\n"))
    assert cli_client.forward(["--db", "/tmp/nowhere.db", "recall", "-"]) is None  # answered here instead
    assert sys.stdin.read() == "the real query\n"  # what was read is there for this process to use


@pytest.mark.parametrize("command", [("recall",), ("store",), ("update",), ("supersede",), ("forget",)])
def test_help_says_the_text_argument_is_seen_by_others_and_names_stdin(command, capsys) -> None:
    assert main([*command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "visible to other local users" in text and "'-' reads it from stdin" in text, text


@pytest.mark.parametrize("level", [None, "debug"])
def test_serve_keeps_query_strings_out_of_its_log_below_debug(tmp_path: Path, level: str | None) -> None:
    port = free_port()
    process = start(tmp_path / "m.db", "serve", "--port", str(port), *(["--log-level", level] if level else []))
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_healthy(process, url)
        answer = httpx.get(f"{url}/recall", params={"query": "secret-plans", "api_key": "k3y-not-for-logs"},
                           timeout=10)
        assert answer.status_code == 200
    finally:
        stop(process)
    logged = b"".join(stream.read() for stream in (process.stdout, process.stderr) if stream).decode()
    if level is None:  # the default, info: the line is there, its query is not
        assert "GET /recall?(query not logged)" in logged, logged
        assert "secret-plans" not in logged and "k3y-not-for-logs" not in logged, logged
    else:  # asked for, and said as the server starts (api_key was taken out of the request before)
        assert "GET /recall?query=secret-plans HTTP/1.1" in logged, logged
        assert "--log-level debug: the access log shows each request's whole URL" in logged, logged


def test_debug_level_logs_the_query_and_a_bad_level_is_refused_by_name(capsys) -> None:
    from localmem.http.access_log import PathOnlyAccessFormatter, log_config

    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5", "GET", "/ui/login?code=abc", "1.1", 200), None)
    hidden = PathOnlyAccessFormatter(fmt="%(request_line)s %(status_code)s", use_colors=False).format(record)
    assert hidden == "GET /ui/login?(query not logged) HTTP/1.1 200 OK"
    assert log_config("info")["formatters"]["access"]["()"].endswith("PathOnlyAccessFormatter")
    assert log_config("DEBUG")["formatters"]["access"]["()"] == "uvicorn.logging.AccessFormatter"
    assert main(["serve", "--log-level", "loud"]) == 2
    assert "--log-level" in capsys.readouterr().err


def test_a_symlinked_push_lock_is_refused_and_not_followed(tmp_path: Path) -> None:
    from localmem.replication.push import push_lock

    db, elsewhere = tmp_path / "m.db", tmp_path / "elsewhere"
    with MemoryStore(str(db), embedder="hash") as store:
        Path(f"{db}.push-lock").symlink_to(elsewhere)
        with pytest.raises(LocalMemError, match="symbolic link"):
            with push_lock(store):
                pass
    assert not elsewhere.exists()
