"""CLI output as a person sees it: tables that fit the terminal (measured in cells), wide
characters aligned, colour on a terminal only (NO_COLOR, --color), no raw escapes from stored
content, and an import progress bar that moves.

Runs ``python -m localmem`` as a subprocess (the real entry point), in a pseudo-terminal where
the test is about a terminal.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import unicodedata
from pathlib import Path

import pytest

from localmem import MemoryStore

REPO = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
LONG = ("We decided to move the billing service to PostgreSQL because the reporting queries need "
        "window functions and the team knows it well; MongoDB stays for the event log for now")
ROWS = {
    "t-english": LONG,
    "t-cjk": "東京の会議は木曜日に移動しました。参加者は全員です。議題は予算と採用計画、それに来期の目標",
    "t-emoji": "Deploy checklist 🚀: run the migrations, warm the caches, flip the flag ✅ and watch the graphs 📈",
    "t-combining": "Cafe\u0301 au lait with cre\u0300me bru\u0302le\u0301e is what the team orders after every release",
}


def cells(text: str) -> int:
    """Terminal cells of ``text``, measured here independently of localmem's own code."""
    total = 0
    for char in text:
        if unicodedata.combining(char) or char in "\u200d\ufe0f":
            continue
        total += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return total


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("LOCALMEM_DB", "LOCALMEM_EMBEDDER", "LOCALMEM_MODEL", "COLUMNS", "NO_COLOR")}
    base["PYTHONPATH"] = str(REPO) + (os.pathsep + base["PYTHONPATH"] if base.get("PYTHONPATH") else "")
    base["PYTHONIOENCODING"] = "utf-8"
    base.update(extra)
    return base


def run(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "localmem", *args], capture_output=True, text=True,
                          encoding="utf-8", env=env(**extra), timeout=120, check=False)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("output") / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        for tag, content in ROWS.items():
            store.store(content, tags=[tag, "project:billing-platform", "team:payments"])
    return path


def header_offsets(header: str) -> dict[str, int]:
    """Column name -> the cell where it starts, from a header line (names are ASCII)."""
    return {m.group(): m.start() for m in re.finditer(r"\S+", header)}


@pytest.mark.parametrize("columns", [60, 80, 120, 200])
@pytest.mark.parametrize("command", [["recall", "team billing release"], ["by-tag", "team:payments"], ["list"]])
def test_tables_fit_the_terminal_and_the_content_gets_the_room(db: Path, columns: int,
                                                               command: list[str]) -> None:
    result = run("--db", str(db), *command, "--limit", "10", COLUMNS=str(columns))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert all(cells(line) <= columns for line in lines), [(cells(l), l) for l in lines if cells(l) > columns]
    offsets = header_offsets(lines[0])
    start = offsets["content"]
    following = [o for o in offsets.values() if o > start]
    content_width = (min(following) - 2 if following else columns) - start
    # The content is longer than any terminal here: it gets half the width or more (at
    # least 30 cells), while short ids keep the fixed columns narrow.
    assert content_width >= max(30, columns // 2), (content_width, lines[0])
    rows = [line for line in lines[1:lines.index("")] if not line.startswith(" ")]  # not continuations
    assert rows
    for line in rows:
        memory_id = line[offsets["id"]:].split()[0]
        assert re.fullmatch(r"[0-9a-f]{8}", memory_id), line
    if columns >= 200:  # room for everything: the tags are not cut
        assert re.search(r"project:billing-platform, t-[a-z]+", result.stdout), result.stdout  # project first


def test_wide_and_combining_characters_keep_the_columns_aligned(db: Path) -> None:
    result = run("--db", str(db), "by-tag", "team:payments", COLUMNS="120")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    tags_at = header_offsets(lines[0])["tags"]
    seen = set()
    for line in lines[1:len(ROWS) + 1]:
        tag = next(t for t, content in ROWS.items() if content[:8] in line)
        seen.add(tag)
        # each row's tags cell starts with the project tag (shown first), in the same cell as the header's
        assert cells(line[:line.index("project:billing-platform")]) == tags_at, (tag, line)
    assert seen == set(ROWS)


def test_control_characters_in_content_do_not_reach_the_terminal(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store("harmless looking \x1b]0;pwned\x07 note \x1b[31mred\x1b[0m text")
        store.store("tagged too", tags=["x"])
    result = run("--db", str(path), "recall", "harmless looking note")
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "harmless looking" in result.stdout
    # get and update print the whole text, lines and tabs kept: they printed it raw
    memory_id = json.loads(run("--db", str(path), "--json", "list").stdout)["memories"][-1]["id"]
    for args in (["get", memory_id], ["update", memory_id, "--content", "two\tlines\n\x1b[2Jand a clear screen"]):
        shown = run("--db", str(path), *args)
        assert shown.returncode == 0, shown.stderr
        assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout, shown.stdout
    assert "\ufffd[2Jand a clear screen" in shown.stdout and "two" in shown.stdout
    from localmem.trash import move_to_trash  # what sync and pull delete, often another machine's text

    with MemoryStore(path, embedder="hash") as store:
        move_to_trash(store, store.store("trashed \x1b]0;pwned\x07 text"), "test")
    listed = run("--db", str(path), "trash", "list")
    assert listed.returncode == 0 and "trashed" in listed.stdout, listed.stderr
    assert "\x1b" not in listed.stdout and "\x07" not in listed.stdout
    planned = run("--db", str(path), "forget", "--matching", "clear screen", "--dry-run")
    assert planned.returncode == 0 and "and a clear screen" in planned.stdout, planned.stderr
    assert "\x1b" not in planned.stdout and "\x07" not in planned.stdout


def test_a_hook_explains_a_note_without_its_control_characters() -> None:
    from localmem.hooks.selection import Candidate  # its preview is what 'localmem hook -v' prints

    note = Candidate("m1", 0.9, {"content": "a note \x1b]0;pwned\x07 with \x1b[31mcolour"})
    assert note.explain()["preview"] == "a note \ufffd]0;pwned\ufffd with \ufffd[31mcolour"



def test_a_folder_name_s_control_characters_do_not_reach_the_terminal(tmp_path: Path) -> None:
    """Found in audit17: ``hooks status`` and the hook's ``-v`` lines printed the project's folder as written, so a
    checkout named ``x\\x1b]0;PWNED\\x07\\x1b[31mred`` (an unpacked archive, a cloned name) retitled and recoloured the
    terminal; the hook's folder is the assistant's ``cwd``. Shown as U+FFFD, as stored text is."""
    from tests.hook_helpers import run_hook

    folder = tmp_path / "x\x1b]0;PWNED\x07\x1b[31mred"
    (folder / ".git").mkdir(parents=True)
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store("The billing service runs on Postgres 14.")
    status = run("--db", str(db), "hooks", "status", str(folder))
    assert status.returncode == 0 and "is project" in status.stdout, status.stderr
    assert "\x1b" not in status.stdout and "\x07" not in status.stdout, status.stdout
    assert "\ufffd]0;PWNED\ufffd\ufffd[31mred" in status.stdout, status.stdout
    _, err = run_hook(db, "UserPromptSubmit", {"hook_event_name": "UserPromptSubmit", "session_id": "s1",
                                               "cwd": str(folder), "prompt": "Which database does billing use?"},
                      LOCALMEM_HOOK_VERBOSE="1")
    assert "project x-0-pwned-31mred" in err, err
    assert "\x1b" not in err and "\x07" not in err, err

# -- colour -----------------------------------------------------------------------------------


def run_in_terminal(args: list[str], columns: int = 100, **extra: str) -> str:
    """Run the CLI with stdout and stderr on a pseudo-terminal of ``columns`` columns; its output."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen([sys.executable, "-m", "localmem", *args], stdin=subprocess.DEVNULL,
                               stdout=secondary, stderr=secondary, env=env(TERM="xterm-256color", **extra))
    os.close(secondary)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([primary], [], [], 60)
            if not ready:
                break
            try:
                data = os.read(primary, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
    finally:
        process.wait(60)
        os.close(primary)
    assert process.returncode == 0, b"".join(chunks)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_colour_on_a_terminal_fitting_its_width(db: Path) -> None:
    screen = run_in_terminal(["--db", str(db), "recall", "team billing release"], columns=100)
    assert "\x1b[" in screen  # coloured: headers, ids, tags
    plain = ANSI.sub("", screen).splitlines()
    assert plain[0].split()[:3] == ["#", "score", "id"]
    # no $COLUMNS: the width came from the terminal itself
    assert all(cells(line) <= 100 for line in plain) and max(cells(line) for line in plain) > 80


def test_no_color_and_color_never_turn_it_off_on_a_terminal(db: Path) -> None:
    for screen in (run_in_terminal(["--db", str(db), "by-tag", "team:payments"], NO_COLOR="1"),
                   run_in_terminal(["--db", str(db), "by-tag", "team:payments", "--color", "never"])):
        assert "\x1b[" not in screen and "content" in screen


def test_colour_only_when_asked_through_a_pipe(db: Path) -> None:
    piped = run("--db", str(db), "by-tag", "team:payments")
    assert piped.returncode == 0 and "\x1b[" not in piped.stdout
    forced = run("--db", str(db), "--color", "always", "by-tag", "team:payments", NO_COLOR="1")  # the flag wins
    assert forced.returncode == 0 and "\x1b[" in forced.stdout
    as_json = run("--db", str(db), "--color", "always", "by-tag", "team:payments", "--json")
    assert "\x1b[" not in as_json.stdout and json.loads(as_json.stdout)["count"] == len(ROWS)


# -- progress ---------------------------------------------------------------------------------


def test_import_progress_bar_moves_within_a_batch(tmp_path: Path) -> None:
    source = tmp_path / "new.jsonl"
    source.write_text("".join(json.dumps({"content": f"memory number {i} about the import"}) + "\n"
                              for i in range(400)), encoding="utf-8")
    result = run("--db", str(tmp_path / "memory.db"), "--embedder", "hash", "import", str(source), "--progress")
    assert result.returncode == 0, result.stderr
    phases: dict[str, list[int]] = {}
    for m in re.finditer(r"(\w+) \[[#.]+\] (\d+)/400", result.stderr):
        phases.setdefault(m.group(1), []).append(int(m.group(2)))
    # all or nothing: every line is checked (and embedded) first, then everything is written
    assert list(phases) == ["checking", "importing"], result.stderr
    checking = phases["checking"]
    assert checking[0] == 0 and checking[-1] == 400  # drawn at once, and finished
    assert checking == sorted(checking)
    between = sorted({c for c in checking if 0 < c < 400})
    assert len(between) >= 4, checking  # moved while the one 1000-memory batch was embedded
    assert phases["importing"][-1] == 400
    assert result.stdout.startswith("imported 400 memories and 0 edges")


# Issue 45: at 80 columns `list` cut tags mid-name ("project:sh... +2"), and the hooks'
# long session:<uuid> tags crowded out the project tag.
SESSION_A = "session:0b1f3c1e-8a55-4d8f-9d4f-2b8c0d7a1e11"
SESSION_B = "session:1c2f3c1e-8a55-4d8f-9d4f-2b8c0d7a1e12"


def test_list_at_80_columns_shows_the_project_tag_whole_before_session_tags(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with MemoryStore(path, embedder="hash") as store:
        store.store("Captured: keep the shopping list in the app", tags=[SESSION_A, "project:shopping-list"])
        store.store("Captured: we use SQLite", tags=[SESSION_A, SESSION_B, "source:claude-code", "project:shop"])
        store.store("A note with one very long tag",
                    tags=[SESSION_A, "project:a-very-long-project-name-that-no-column-holds"])
    for columns, expected in ((80, {"shopping": "+2", "SQLite": "project:shop +3", "long tag": "+2"}),
                              (100, {"shopping": "project:shopping-list +1", "SQLite": "project:shop +3",
                                     "long tag": "+2"})):
        result = run("--db", str(path), "--embedder", "hash", "list", COLUMNS=str(columns))
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert all(cells(line) <= columns for line in lines)
        tags_at = header_offsets(lines[0])["tags"]
        shown = {word: line[tags_at:].strip() for line in lines[1:4] for word in expected if word in line}
        assert shown == expected, (columns, result.stdout)  # whole names or a count, never "project:sh..."


def test_fit_items_keeps_items_whole() -> None:
    from localmem.cli.output import fit_items

    assert fit_items(["project:alpha", "db"], 40) == "project:alpha, db"
    assert fit_items(["project:alpha", "db", "x"], 17) == "project:alpha +2"
    assert fit_items(["project:shopping-list", "db"], 10) == "+2"
    assert fit_items(["project:shopping-list"], 10) == "+1"
    assert fit_items(["abc", "def"], 1) == "+"  # narrower than any count: still no cut name


def test_display_tags_put_the_project_first_and_sessions_last() -> None:
    from localmem.cli.output import display_tags

    assert display_tags([SESSION_A, "source:claude-code", "Project:Shop", "db", SESSION_B]) == \
        ["Project:Shop", "source:claude-code", "db", SESSION_A, SESSION_B]
