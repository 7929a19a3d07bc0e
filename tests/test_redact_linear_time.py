"""Redaction's rules on hostile text (localmem/privacy/redact.py): work bounded by the text's length.

The JWT rule once tried every token start in a run of token characters ("eyJ-eyJ-…", each scanning to
the run's end): quadratic, 1 MB took about twenty minutes. It now tries a run's first start only; its
answers are those of the rule as it was (a later start in the same run shares the first's end). The
Discord rule, rewritten to be searched faster, also finds what it found."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path

from localmem.privacy import redact
from localmem.privacy.redact import RULES

OLD_JWT = re.compile(r"\beyJ[0-9A-Za-z_\-]{8,}\.eyJ[0-9A-Za-z_\-]{8,}\.[0-9A-Za-z_\-]{8,}")
JWT = next(rule.pattern for rule in RULES if rule.kind == "jwt")


def _secret_spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    group = "secret" if "secret" in pattern.groupindex else 0
    return [m.span(group) for m in pattern.finditer(text)]


def test_the_jwt_rule_finds_what_it_found_before():
    rng = random.Random(11)
    pieces = ["eyJ", "eyJ", "-", "-", ".", "a", "Zk9", "_", " ", "\u00e9", "0", "\n", "=",
              "eyJhbGciOiJIUzI1NiJ9.", "eyJzdWIiOiIx.", "c2lnbmF0dXJl"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 40))) for _ in range(20_000)]
    texts += ["x-eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU",
              "\u00e9eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU",
              "abceyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlX2hlcmU"]
    found = 0
    for text in texts:
        assert _secret_spans(JWT, text) == _secret_spans(OLD_JWT, text), text
        found += bool(_secret_spans(JWT, text))
    assert found > 200  # the texts hold tokens


def test_many_token_starts_in_one_run_are_redacted_in_linear_time():
    """Before: "eyJ-" * 250_000 held ~250,000 starts, each scanning the rest of the 1 MB run."""
    for text in ["eyJ-" * 250_000, "eyJ-" * 250_000 + ".eyJ" + "a" * 10, "-eyJ" * 250_000 + ".",
                 ("eyJaaaaaaaaa-" * 20 + ". ") * 4_000]:
        assert redact(text).text == text


OLD_DISCORD = re.compile(r"\b[MNO][0-9A-Za-z_\-]{23,25}\.[0-9A-Za-z_\-]{6}\.[0-9A-Za-z_\-]{27,38}(?![0-9A-Za-z_\-])")
DISCORD = next(rule.pattern for rule in RULES if rule.kind == "discord-bot-token")


def test_the_discord_rule_finds_what_it_found_before():
    """Its word boundary is now looked at behind the first character (so the search skips to an M, N or O)."""
    rng = random.Random(12)
    token = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs"
    pieces = [token, token[:30], token[1:], "N", "O", "M", "a", "_", "-", ".", " ", "\u00e9", "\u4e2d", "\n", "9"]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(20_000)]
    found = 0
    for text in texts:
        assert [m.span() for m in DISCORD.finditer(text)] == [m.span() for m in OLD_DISCORD.finditer(text)], text
        found += bool(DISCORD.search(text))
    assert found > 1000


def _old_login_password(match: re.Match[str]) -> bool:
    """The user-then-password rule's accept as it was: a search of its line from the line's start to the match,
    once per match (a long line of matches made it quadratic)."""
    from localmem.privacy.redact import _argument_value
    line_start = match.string.rfind("\n", 0, match.start()) + 1
    prompting = re.compile(r"\b(?:mysql|mariadb)[a-z\-]{0,12}[ \t]")
    return _argument_value(match) and not prompting.search(match.string, line_start, match.start())


def test_the_user_then_password_rule_accepts_what_it_accepted_before():
    from localmem.privacy.redact import _login_password
    from localmem.privacy.patterns import USER_THEN_PASSWORD_FLAG
    pattern = re.compile(USER_THEN_PASSWORD_FLAG)
    rng = random.Random(17)
    pieces = ["mysql ", "mariadb-dump ", "mysqlx\t", "mysql-", "xmysql ", "mongo ", "-u admin ", "-U sa ", "-p ",
              "-P ", "Zq8vT2mLx", "secret ", "\n", " ", "db ", "--user=root ", "mysqladmin-very-long-name "]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(20_000)]
    accepted = 0
    for text in texts:
        for match in pattern.finditer(text):
            assert _login_password(match) == _old_login_password(match), text
            accepted += _login_password(match)
    assert accepted > 500  # the texts hold passwords after user flags, and mysql lines that prompt


def test_a_long_line_of_user_then_password_flags_is_redacted_in_linear_time():
    """Found in audit17: each match of ``-u USER … -p PASSWORD`` searched its line from the line's start for a
    mysql command: ``"mongo -u admin -p Z" * 55_000`` (1 MB, one line) took about half an hour (16 KB 0.36 s,
    64 KB 5.7 s). Now a match looks back at most ``_COMMAND_REACH`` characters of its line. Run in a subprocess
    with a deadline far above the linear time."""
    code = ("from localmem.privacy import redact\n"
            "text = 'mongo -u admin -p Z' * 55_000\n"
            "assert redact(text).text != text\n"
            "text = 'mysql -u admin -p Z ' * 52_000\n"  # each -p a database name, a mysql command just before it
            "assert redact(text).text == text\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
