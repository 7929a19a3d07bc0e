"""What a message is made of, line by line: prose, or code/log/diff/tool-output shaped.

Capture reads a message's shape, not its first line: every line is labelled,
runs of code-shaped lines are found wherever they sit, and the message is kept
whole, kept as its prose with the dumps cut out, or skipped. Also here: the
whole-message tests capture's rules use (courtesy or assent only, a bare
question, a retraction of an earlier turn). Pure functions of the text and
the compiled rules; no model, no store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .noise_rules import NoiseRules

MAX_LINES = 5000  # lines labelled per message (a 12,000-character message holds fewer)

_FENCE = re.compile(r"^\s*(```|~~~)")
_DIFF_HEADER = re.compile(r"^(diff --git |@@ -\d+(,\d+)? \+\d+(,\d+)? @@|--- a/|\+\+\+ b/|index [0-9a-f]{6,}\.\.)",
                          re.MULTILINE)
# Each alternative is one kind of machine-made line; any match labels the line code-shaped.
_MACHINE_LINE = re.compile("|".join([
    # tracebacks: Python, Java/JS/Go/Rust frames, exception lines, carets
    r'^\s*Traceback \(most recent call last\)', r'^\s*File "[^"\n]*", line \d+',
    r"^\s*at [\w$.<>\[\]/@-]+ ?\(.*\)\s*$", r"^\s*at \S+:\d+(:\d+)?\)?\s*$",
    r"^\s*During handling of the above exception", r"^\s*\^[\^~\s]*$",
    r"^\s*([\w.]+\.)?[A-Z]\w*(Error|Exception|Exit|Interrupt|Warning)(:.*)?$",
    r"^\s*([a-z_]\w*\.)+[A-Z]\w*(: .*)?$", r"^\s*panicked at ",
    r"^\s*goroutine \d+ \[", r"^\s*thread '.*' panicked",
    # logs: timestamps, levels, syslog, test runners, package managers, compilers
    r"^\s*\[?\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}", r"^\s*\[?\d{1,2}:\d{2}:\d{2}([.,]\d+)?\]?\s",
    r"^\s*\[?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|SEVERE)\]?[:\s|-]",
    r"^[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d ", r"^\s*(npm|yarn|pnpm) (ERR!|WARN|notice)",
    r"^\s*(error|warning)(\[E?\d+\])?: ", r"^\s*-->\s+\S+:\d+:\d+", r"^\s*\d+\s+\|\s",
    r"^\s*\S+::\S+ (PASSED|FAILED|ERROR|SKIPPED)", r"^(FAILED|PASSED|ERROR) \S+", r"^E {2,}\S",
    r"^\s*=+ .* =+\s*$", r"^\s*[-=_*#~]{4,}\s*$", r"^\s*collected \d+ items?",
    r"^\s*\d+ (passed|failed|errors?)\b", r"^\s*(not )?ok \d+ ", r"^\s*(real|user|sys)\s+\d+m[\d.]+s",
    # shells and REPLs, paths, hex dumps
    r"^\s*(\$|>>>|\.\.\.|%) \S", r"^\s*PS [A-Z]:\\", r"^\s*[\w.~-]*(/[\w.@+-]+){2,}(:\d+)*:?\s*$",
    r"^\s*(0x)?[0-9a-f]{8,}\b", r"^[-dlcbps][rwxsStT-]{9}[@+.]?\s+\d+\s",
    r"^\s*(SELECT|FROM|WHERE|GROUP BY|ORDER BY|HAVING|LIMIT|INSERT INTO|UPDATE|DELETE FROM|CREATE (TABLE|INDEX)|"
    r"ALTER TABLE|(LEFT |INNER |OUTER )?JOIN|VALUES|SET|WITH|UNION)\b(?!.*[.!?]\s*$)",
    # code: declarations, imports, control lines ending in a colon or a brace, decorators
    r"^\s*(def|class|async def|fn|func|function|pub fn|impl|struct|enum|interface|package|namespace)\s+\w+",
    r"^\s*(import\s+[\w.{*]|from\s+[\w.]+\s+import\s|#include\s*[<\"]|using\s+[\w.]+;|require\(|export\s)",
    r"^\s*(public|private|protected|static|const|let|var|val|return|await|yield|raise|throw)\s+\S.*[;{(=)\]]\s*$",
    r"^\s*(if|elif|else|for|while|with|try|except|finally|switch|case|catch)\b.*[:{]\s*$",
    r"^\s*@\w[\w.]*(\(.*\))?\s*$", r"^\s*[\w.\[\]]+\s*(=|\+=|-=|:=|==)\s*\S+.*$",
    r"^\s*<\/?[a-zA-Z][\w:-]*(\s[^>]*)?\/?>\s*$",
    # JSON / YAML / tool output
    r"^\s*[{\[]\s*$", r"^\s*[}\])],?;?\s*$", r'^\s*"[^"\n]{1,80}"\s*:\s*', r"^\s*[{\[].*[}\]],?\s*$",
    r"^\s*[\w.-]+:\s+[\w\"'./:-]+\s*$",
]))
_PROSE_FENCES = frozenset({"", "text", "txt", "plain", "plaintext", "markdown", "md"})
_SHELL_PROMPT = re.compile(r"^\s*(\$|>>>|%|PS [A-Z]:\\\S*>) \S")
_CODE_END = re.compile(r"[;{}]\s*$|^\s*[}\])]")
_WORD = re.compile(r"[^\W\d_]{2,}")
_SYMBOLS = frozenset("{}[]()<>=;$\\&^~`#@/_\"'+*")
_TOKEN = re.compile(r"[\w']+")
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")


@dataclass(frozen=True)
class Shape:
    """A message's text after shape rules: ``text`` to keep (may be empty), what was cut."""
    text: str
    cut_regions: int
    cut_chars: int


def _is_prose(line: str) -> bool:
    words = _WORD.findall(line)
    if len(words) < 3:
        return False
    symbols = sum(1 for c in line if c in _SYMBOLS)
    return symbols / max(1, len(line.strip())) < 0.15


def _labels(lines: list[str], diff: bool) -> list[str]:
    """Each line: ``blank``, ``code`` (code, log, trace, diff, tool output) or ``prose``."""
    labels = []
    fenced = shell_output = False
    prose_fences = _prose_fences(lines)
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            labels.append("blank" if index in prose_fences else "code")
            fenced = not fenced
        elif fenced and index not in prose_fences:
            labels.append("code")
        elif not line.strip():
            labels.append("blank")
            shell_output = False
        elif shell_output or _SHELL_PROMPT.match(line):  # a command and its output, up to a blank line
            labels.append("code")
            shell_output = True
        elif diff and line[:1] in "+- " and not _is_prose(line[1:]):
            labels.append("code")
        elif _DIFF_HEADER.match(line) or _MACHINE_LINE.search(line) or (_CODE_END.search(line) and not _is_prose(line)):
            labels.append("code")
        elif _is_prose(line.replace("`", "")):
            labels.append("prose")
        else:  # a short fragment ("Hi!", "Done.") or symbol-heavy text: code if it looks like it
            dense = sum(1 for c in line if c in _SYMBOLS) / max(1, len(line.strip())) >= 0.2
            labels.append("code" if dense else "prose")
    return labels


def _prose_fences(lines: list[str]) -> set[int]:
    """The line numbers (fences included) of fenced blocks that hold prose, not code: no language
    named (or a prose one) and most lines read as sentences (a quoted email or paragraph)."""
    inside: set[int] = set()
    start = None
    for index, line in enumerate(lines):
        if not _FENCE.match(line):
            continue
        if start is None:
            start = index
            continue
        if lines[start].strip().strip("`~").strip().lower() not in _PROSE_FENCES:
            start = None
            continue
        body = [text for text in lines[start + 1:index] if text.strip()]
        prose = sum(1 for text in body if _is_prose(text) and not _MACHINE_LINE.search(text))
        if body and prose * 2 >= len(body):
            inside.update(range(start, index + 1))
        start = None
    return inside


def _regions(labels: list[str]) -> list[tuple[int, int]]:
    """Runs of code lines [start, end), blank lines inside a run joined to it."""
    runs: list[tuple[int, int]] = []
    start = None
    last_code = -1
    for index, label in enumerate(labels):
        if label == "code":
            if start is None:
                start = index
            last_code = index
        elif label == "prose" and start is not None:
            runs.append((start, last_code + 1))
            start = None
    if start is not None:
        runs.append((start, last_code + 1))
    return runs


def shape_of(text: str, rules: "NoiseRules") -> Shape:
    """Cut the code-shaped runs of ``text`` that are dumps (at least ``dump_min_lines`` lines or
    ``dump_min_chars`` characters); when code-shaped lines are at least ``dump_share_percent`` of
    the message, every code-shaped line goes. The prose is kept in order, untouched."""
    lines = text.split("\n")
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES - 1] + ["\n".join(lines[MAX_LINES - 1:])]
    labels = _labels(lines, bool(_DIFF_HEADER.search(text)))
    sizes = [len(line.strip()) for line in lines]
    total = sum(sizes) or 1
    code_chars = sum(size for size, label in zip(sizes, labels) if label == "code")
    share = code_chars / total
    mostly_code = share * 100 >= rules.dump_share_percent
    drop = [False] * len(lines)
    cut_regions = cut_chars = 0
    for start, end in _regions(labels):
        chars = sum(sizes[start:end])
        if mostly_code or end - start >= rules.dump_min_lines or chars >= rules.dump_min_chars:
            for index in range(start, end):
                drop[index] = True
            cut_regions += 1
            cut_chars += chars
    if not cut_regions:
        return Shape(text, 0, 0)
    prose = [i for i, gone in enumerate(drop) if not gone and labels[i] == "prose"]
    if len(prose) == 1 and lines[prose[0]].rstrip().endswith(":") and prose[0] + 1 < len(lines) \
            and drop[prose[0] + 1]:
        # "Here is the file:" before a dump only introduces it: the dump and its lead-in go together.
        return Shape("", cut_regions, cut_chars + sizes[prose[0]])
    kept = "\n".join(line for line, gone in zip(lines, drop) if not gone)
    kept = re.sub(r"\n{3,}", "\n\n", kept).strip()
    return Shape(kept, cut_regions, cut_chars)


def is_courtesy(text: str, rules: "NoiseRules", allow_name: bool = True) -> bool:
    """The whole message is acknowledgement, assent, thanks or goodbye: every word is one of
    ``courtesy_words`` (at most ``courtesy_max_words`` words), allowing one capitalised word
    (the name of the one addressed: "Thanks, Dana!") unless ``allow_name`` is false."""
    tokens = [t.lower().strip("'") for t in _TOKEN.findall(text)]
    if not tokens or len(tokens) > rules.courtesy_max_words:
        return False
    if any(ch.isdigit() for ch in text):
        return False
    others = [t for t in tokens if t not in rules.courtesy_words]
    if not others:
        return True
    if not allow_name:
        return False
    names = [w for w in _TOKEN.findall(text) if w.lower().strip("'") in others]
    return len(others) == 1 and len(tokens) > 1 and names[0][:1].isupper() and names[0][1:].islower()


def is_bare_question(text: str, rules: "NoiseRules") -> bool:
    """Every sentence of the message is a question (ends with '?'), it is at most
    ``bare_question_max_chars`` long, and it says nothing about the one asking
    (no ``first_person_words``: "my", "we", "I'm" ... carry a fact)."""
    if len(text) > rules.bare_question_max_chars or "?" not in text:
        return False
    sentences = [s.strip() for s in _SENTENCE.findall(text) if _WORD.search(s)]
    if not sentences or not all(s.endswith("?") for s in sentences):
        return False
    tokens = {t.lower() for t in _TOKEN.findall(text)}
    return not tokens & rules.first_person_words


def is_retraction(text: str, rules: "NoiseRules") -> bool:
    """The message opens by taking back or correcting what came before (``retraction_patterns``,
    searched in its first 200 characters)."""
    head = text[:200]
    return any(p.search(head) for p in rules.retraction_patterns)
