"""The README and docs/ say what the code does: their links lead somewhere, the commands
they show parse, the README stays a short guide, and its two opening commands are the ones CI runs."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from localmem.cli.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "experiments" / "README.md",
         *sorted(p for p in (ROOT / "docs" / "results").glob("*.md") if p.name != "history.md"),
         ROOT / "benchmarks" / "README.md", ROOT / "benchmarks" / "attacks" / "README.md"]
FENCE = re.compile(r"^ *```.*?^ *```[^\n]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def without_code(text: str) -> str:
    """The prose: fenced blocks and inline code spans removed (links in them are not links)."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return re.findall(r"^ *```(\w*)[^\n]*\n(.*?)^ *```", text, re.MULTILINE | re.DOTALL)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub makes for a page's headings (lower case, punctuation dropped,
    spaces as hyphens, -1, -2 ... for repeats)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for title in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", path.read_text(encoding="utf-8")), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(f"{slug}-{count}" if count else slug)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in LINK.findall(without_code(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto: ...
            continue
        name, _, anchor = target.partition("#")
        path = (page.parent / name).resolve() if name else page
        if not path.exists():
            broken.append(f"{target}: no {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            broken.append(f"{target}: no heading with anchor #{anchor} in {path.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def shown_commands(text: str) -> list[list[str]]:
    """The localmem command lines of the page's shell and JSON blocks, as argument lists:
    a shell segment starting with ``localmem`` (after a ``$`` prompt), what follows
    ``"$(which localmem)"``, and the ``args`` of an MCP client entry whose command is localmem."""
    commands = []
    for language, body in fenced_blocks(text):
        if language == "json":
            config = json.loads(body)
            for server in {**config.get("mcpServers", {}), **config.get("servers", {})}.values():
                if Path(server.get("command", "")).name == "localmem":  # url entries have none
                    commands.append(list(server.get("args", [])))
            continue
        if language not in ("", "bash", "console", "sh"):
            continue
        for line in body.splitlines():
            line = line.strip()
            if language == "console" and not line.startswith("$ "):
                continue  # output
            for segment in re.split(r"&&|;|\|", line.removeprefix("$ ")):
                try:
                    words = shlex.split(segment, comments=True)
                except ValueError:
                    continue
                if words[:1] == ["localmem"]:
                    commands.append(words[1:])
                elif "$(which localmem)" in words:
                    commands.append(words[words.index("$(which localmem)") + 1:])
    return commands


def test_the_pages_show_localmem_commands():
    readme = shown_commands(README.read_text(encoding="utf-8"))
    assert ["demo"] in readme and ["mcp"] in readme
    assert any(words[:1] == ["store"] for words in readme) and any(words[:1] == ["recall"] for words in readme)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_shown_parses(page, capsys):
    parser = build_parser()
    for words in shown_commands(page.read_text(encoding="utf-8")):
        try:
            parsed = parser.parse_args(words)
        except SystemExit:
            pytest.fail(f"{page.name}: 'localmem {shlex.join(words)}' does not parse: "
                        f"{capsys.readouterr().err.strip()}")
        assert parsed.command, words


def test_a_command_that_does_not_parse_is_caught(capsys):
    """The check above can fail: a misspelt option in a shown command is refused."""
    text = "```bash\nlocalmem recall 'knee' --tgas health\n```\n"
    with pytest.raises(SystemExit):
        build_parser().parse_args(shown_commands(text)[0])
    assert "did you mean --tags" in capsys.readouterr().err


def test_the_readme_is_a_short_guide():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 320, f"README.md has {len(lines)} lines; move detail to docs/"


def opening_commands() -> tuple[list[str], list[str]]:
    """The README's first two fenced blocks, before its first section: install + demo, install + tests."""
    text = README.read_text(encoding="utf-8")
    head = text.split("\n## ", 1)[0]
    blocks = [body.strip() for language, body in fenced_blocks(head)]
    assert len(blocks) >= 2, "README.md must open with the demo command and the test command"
    demo, tests = blocks[0], blocks[1]
    assert "\n" not in demo and "\n" not in tests, "each opening command is one line to paste"
    return [step.strip() for step in demo.split("&&")], [step.strip() for step in tests.split("&&")]


def ci_steps() -> list[str]:
    """.ci/run's install and test steps, written as a user types them (pip, no --quiet)."""
    steps = []
    for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "--upgrade pip" in line:
            continue
        line = line.replace("python -m pip", "pip").replace(" --quiet", "")
        if line.startswith(("python3 -m venv", ". .venv/bin/activate", "pip install", "python -m pytest")):
            steps.append(line)
    return steps


def test_the_readme_test_command_is_what_ci_runs():
    demo, tests = opening_commands()
    assert tests == ci_steps()
    assert tests[-1] == "python -m pytest"
    # The demo command installs the same way, without the test extra, and runs the demo.
    assert demo[-1] == "localmem demo"
    assert demo[:-1] == [step.replace('".[all,test]"', '".[all]"') for step in tests[:-1]]


def test_every_docs_page_is_in_the_readme_contents():
    text = README.read_text(encoding="utf-8")
    missing = [page.name for page in sorted((ROOT / "docs").glob("*.md")) if f"](docs/{page.name})" not in text]
    assert not missing, f"docs pages the README does not link: {missing}"


def test_results_contents_list_follows_the_sections(tmp_path):
    """docs/results/history.md opens with a contents list, and writing a section brings it up to date."""
    from benchmarks.common.results_file import CONTENTS_START, write_section

    results = (ROOT / "docs" / "results" / "history.md").read_text(encoding="utf-8")
    assert results.index(CONTENTS_START) < results.index("\n## ")
    path = tmp_path / "RESULTS.md"
    path.write_text("# Results\n\nIntro.\n\n<!-- a:start -->\n## Speed at 100k (2026)\nold\n<!-- a:end -->\n")
    write_section("b", "## Speed at 100k (2026)\nagain\n\n## Quality: R@10\nnew", path)
    text = path.read_text()
    assert text.index(CONTENTS_START) < text.index("<!-- a:start -->")
    assert "- [Speed at 100k (2026)](#speed-at-100k-2026)\n- [Speed at 100k (2026)](#speed-at-100k-2026-1)\n" \
           "- [Quality: R@10](#quality-r10)\n" in text
    assert text.count(CONTENTS_START) == 1 and "old" in text and "new" in text


def test_the_python_quickstart_runs_outside_the_clone(tmp_path):
    """The README's Python quickstart, pasted into a file in a folder of its own (issue 45: it
    failed when run from the folder holding the clone; the README says where to run it)."""
    import os
    import subprocess
    import sys

    text = README.read_text(encoding="utf-8")
    section = text.split("## Quickstart: Python", 1)[1].split("\n## ", 1)[0]
    code = next(body for language, body in fenced_blocks(section) if language == "python")
    assert "the folder that holds the clone" in section  # the one place it cannot run from
    (tmp_path / "quickstart.py").write_text(code, encoding="utf-8")
    # The snippet's MemoryStore is "auto" (the real model). The suite's ONNX settings are kept, as
    # every other test's: no export of the model into this HOME (a quarter of a minute).
    kept = ("LOCALMEM_CACHE_DIR", "LOCALMEM_ONNX_EXPORT")
    env = {k: v for k, v in os.environ.items() if (k in kept or not k.startswith("LOCALMEM_")) and k != "PYTHONPATH"}
    env.update(HOME=str(tmp_path))
    result = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "Chose PostgreSQL over MongoDB" in result.stdout
    assert (tmp_path / "notes" / "memory.db").stat().st_mode & 0o777 == 0o600


def test_every_benchmark_is_in_the_benchmarks_index():
    """benchmarks/README.md lists every command of benchmarks/ (issue 45: one index, one line each)."""
    index = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    helpers = {"common", "attacks"}  # shared modules; the attack tool has its own README
    missing = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "benchmarks").glob("*/*.py"))
               if path.parent.name not in helpers and f"python {path.relative_to(ROOT)}" not in index]
    assert not missing, f"benchmarks missing from benchmarks/README.md: {missing}"
    assert not list((ROOT / "benchmarks").glob("*.py")), "benchmarks/ keeps its scripts in the group folders"


def test_every_current_figure_is_two_clicks_from_the_readme():
    """README -> docs/benchmarks.md holds a row per target: what, value, target, machine, date, command."""
    assert "](docs/benchmarks.md)" in README.read_text(encoding="utf-8")
    text = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    header = "| what | value | target | machine | date | command |"
    rows = [line for block in text.split(header)[1:] for line in block.split("\n\n", 1)[0].splitlines()[2:]]
    assert text.count(header) == 5 and len(rows) >= 20
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert len(cells) == 6 and all(cells[:2]) and re.match(r"20\d\d-\d\d-\d\d", cells[4]), row
        assert cells[5].startswith("`python benchmarks/") or cells[5] == "same", row
        for script in re.findall(r"benchmarks/[\w/]+\.py", cells[5]):
            assert (ROOT / script).exists(), row


def test_the_readme_names_each_one_time_step_of_the_demo():
    """Issue 45: the second `demo` run built the learned ranking's query graph, a one-time step the
    README did not mention. Each step's message (what the user sees on stderr) is in the README's
    first-run note, and still in the code that prints it."""
    first_run = README.read_text(encoding="utf-8").split("- **First run:**", 1)[1].split("\n- **", 1)[0]
    steps = {"exports it once to ONNX": ("onnx_export.py", "to ONNX once"),
             "building the query graph": ("onnx_runtime.py", "building the query graph")}
    for said, (module, message) in steps.items():
        assert said in first_run, said
        assert message in (ROOT / "localmem" / "embedders" / module).read_text(encoding="utf-8"), module
    assert "second demo" in first_run and "no one-time step" in first_run
