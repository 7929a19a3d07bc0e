"""Redaction: a text with its credentials replaced by typed placeholders, and its private regions cut.

``redact(text)`` is a pure function: it returns the text to store and what was
found (kinds and counts, never the secret). Every rule is a regular expression
found by a single pass per rule over the original text; the spans found are
then merged (the earliest, then the longest, wins an overlap) and replaced in
one pass, so a placeholder is never matched again and the work is linear in
the text per rule. ``<private>…</private>`` regions go first: an unclosed one
drops the rest of the text. The patterns are localmem/privacy/patterns.py's: the providers' documented
token formats (benchmarks/common/credential_corpus.py builds a corpus of them) plus generic rules for what has
no fixed shape: key blocks of any kind (armour naming a private, secret or other non-public key), passwords
in URLs, connection strings, passwords given to a command (``mysql -p…``, ``curl -u user:…``, ``ldapsearch
-w …``, ``smbclient -U user%…``), ``KEY=value`` with a secret-like name (or a name ending in ``_pass`` or
``_auth``), a name ending in "key" given a random value (or a numbered key: ``Unseal Key 1: …``), netrc
entries, config-file keys that always hold one (.npmrc, docker's "auth", .pgpass, a base64 PEM private key),
cookies, JWTs, ``Authorization`` headers of any scheme, a client made from a random literal
(``Client("…")``), ``sk-`` keys, seed phrases, webhook URLs' tokens, and high-entropy values next to a key-like
word (benchmarks/common/credential_heldout.py to credential_heldout4.py hold formats no rule was written from, to
measure what these generalise to).

A rule runs only on a text holding strings every match of it holds: one of its
``regex_literals.required_substrings`` (``AKIA``…, ``xox``, ``-----BEGIN ``), and for a few
rules one of them spelt out whole too (``ghp_``…, ``api_key``…), each looked for by ``str in``
(one C scan); a rule that ignores case looks in the text folded by ``_fold``; a rule whose only
string is in most texts (the .pgpass rule's ``:``) has a precheck pattern with a literal start. The answer is
the one every rule running would give (tests/test_redact_prefilter.py); it is only cheaper.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping

from ..errors import ValidationError
from ..regex_literals import required_substrings
from .patterns import (C_DEFINE_SECRET, ERLANG_COOKIE, GENERIC_RULES, IFTTT_KEY, JENKINS_AUTH,
                       KEEPASS_PASSWORD_VALUE, NETSH_KEY_CONTENT, ORACLE_USER_PASSWORD, PHP_DEFINE_SECRET,
                       PROVIDER_RULES, SECRET_WORD_STRINGS, SECURESTRING_PLAIN_TEXT, SESSION_EXPORT,
                       SINGLE_DASH_PASSWORD_FLAG, USER_COLON_PASSWORD, USER_THEN_PASSWORD_FLAG, WIFI_QR_PASSWORD)

PRIVATE_KIND = "private-region"
_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)
_PLACEHOLDER = "[redacted: {}]"
MIN_ENTROPY = 3.0  # bits per character of a value that counts as high-entropy (hex of 32+ is ~4)

_PLACEHOLDER_VALUES = re.compile(r"(?i)^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|\*+|x{3,}|\.{3,}|<[^>]*>"
                                 r"|null|none|nil|true|false|undefined|required|optional|changeme|example"
                                 r"|(?:your|my|replace|change|insert|enter|put)[_\-].*|redacted|hidden|secret|password|string|str"
                                 r"|env|os\.environ.*"
                                 r"|\{\{.*\}\})$")


@dataclass(frozen=True)
class Redaction:
    """A redacted text and what was taken out of it: ``findings`` counts per kind (no secrets)."""

    text: str
    findings: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.findings)


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool]  # whether the match is a secret, given its context
    # Sets of strings: every match contains one string of each (in the text folded by _fold when ``folded``).
    # None: the rule always runs.
    needs: tuple[frozenset[str], ...] | None = None
    folded: bool = False
    # A pattern every match of the rule holds a match of, starting with a literal (so the search skips to it):
    # for a rule whose strings are in most texts (the .pgpass rule's ":"). None: none.
    precheck: re.Pattern[str] | None = None


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _always(match: re.Match[str]) -> bool:
    return True


# Values that are code or a path, not a secret: a dotted name (request.form), a variable
# ($x, +x), a path, a YAML key ("api_key:"), a host or package name (sops.k8s.mozilla.org/x).
_NOT_A_VALUE = re.compile(r"^(?:[A-Za-z_][A-Za-z0-9_\\]*(?:\.[A-Za-z_][A-Za-z0-9_\\]*)+(?:\(.*|\[.*)?"
                          r"|[$+@&|].*|\.{0,2}/.*|~/.*|.*:|[a-z0-9\-]+(?:\.[a-z0-9\-]+)+(?:/[a-z0-9.\-]*)*)$")


def _value(match: re.Match[str]) -> str:
    return match.group("secret")


def _class_changes(part: str) -> int:
    """How many times ``part`` changes between lower case, upper case and digits (``nL0SIXdQ``: 5)."""
    classes = [c.islower() - c.isupper() + 2 * c.isdigit() for c in part if c.isalnum()]
    return sum(a != b for a, b in zip(classes, classes[1:]))


def _dotted_password(value: str) -> bool:
    """A dotted name with a part changing case or digits five or more times (``nL0SIXdQ.uzbw``, issue 40: an unquoted
    dotted password): a password, not code (``request.form``, ``getS3Object.x`` changes four times)."""
    return bool(_DOTTED_NAME.fullmatch(value)) and any(_class_changes(part) >= 5 for part in value.split("."))


def _random_part(value: str) -> bool:
    """Whether a dotted value has a part no code name has: 16+ characters holding 2+ digits and 2+ letters
    (``patAbc….e2610899…``, ``….atlasv1.…``), so that it is a token, not ``request.form``; or is a dotted
    password."""
    return any(len(part) >= 16 and sum(c.isdigit() for c in part) >= 2 and sum(c.isalpha() for c in part) >= 2
               for part in value.split(".")) or _dotted_password(value)


def _code_or_path(value: str) -> bool:
    return bool(_NOT_A_VALUE.match(value)) and not _random_part(value)


_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _quoted_literal(match: re.Match[str]) -> bool:
    """A value in quotes holding a dot, a digit and both cases (``"dYi8WNcApo_TRET.EGU"``): a string literal, not
    code (code is not quoted; ``"request.form"`` and a host in quotes are in one case and hold no digit)."""
    value, text = _value(match), match.string
    start, end = match.span("secret")
    quoted = 0 < start and end < len(text) and text[start - 1] in "\"'" and text[end] == text[start - 1]
    return (quoted and bool(_DOTTED_NAME.fullmatch(value)) and any(c.isdigit() for c in value)
            and any(c.isupper() for c in value) and any(c.islower() for c in value))


def _assigned_value(match: re.Match[str]) -> bool:
    """A value assigned to a secret-like name is a secret unless it is a placeholder, code (a dotted name not in
    quotes), or (after a colon, as prose has it: "credentials: Ensure…") a plain word."""
    value = _value(match)
    if _PLACEHOLDER_VALUES.match(value) or (_code_or_path(value) and not _quoted_literal(match)):
        return False
    if value.isalpha() and (value.islower() or (match.groupdict().get("sep") == ":" and value.istitle())):
        return False
    return len(value) >= 6


_METAVARIABLE = re.compile(r"[A-Z][A-Z_\-]*")  # a manual's stand-in: --password=PASSWORD, --pass=FILE


def _argument_value(match: re.Match[str]) -> bool:
    """A command's password argument is one unless it is a placeholder, a manual's stand-in, a variable or
    code, or looks like the next flag (``--password -u root`` prompts for it); closing brackets and
    punctuation after it (``[--password=PASSWORD]``) are not looked at."""
    value = _value(match)
    bare = value.rstrip("])}>,;.")
    return not (value.startswith("-") or _PLACEHOLDER_VALUES.match(value) or _PLACEHOLDER_VALUES.match(bare)
                or (_NOT_A_VALUE.match(bare) and not _dotted_password(bare)) or _METAVARIABLE.fullmatch(bare)
                or len(bare) < 4)


_PROMPTING_COMMAND = re.compile(r"\b(?:mysql|mariadb)[a-z\-]{0,12}[ \t]")
# How far back on its line a match looks for a mysql command: a bound, so that a long line of ``-u … -p …`` is
# not searched from its start once per match (audit17: 1 MB on one line, half an hour). A command further back
# than this is not seen, and its ``-p db`` is then redacted: the safe side.
_COMMAND_REACH = 512


def _login_password(match: re.Match[str]) -> bool:
    """A command's password after its user flag (``-U sa -P …``), unless the command is mysql's or mariadb's, whose
    ``-p …`` with a space prompts for the password and takes ``…`` as the database: a mysql command on the match's
    line, within ``_COMMAND_REACH`` characters before it."""
    if not _argument_value(match):
        return False
    text, end = match.string, match.start()
    reach = max(0, end - _COMMAND_REACH)
    line_start = text.rfind("\n", reach, end) + 1 or reach
    return not _PROMPTING_COMMAND.search(text, line_start, end)


def _user_password_argument(match: re.Match[str]) -> bool:
    """``user:password`` given to a user flag or key, unless the two are the same name or the second holds no letter
    (``www-data:www-data``, ``1000:1000``: a user and a group)."""
    value = _value(match)
    return (_argument_value(match) and value != match.group("user") and any(c.isalpha() for c in value))


def _single_dash_value(match: re.Match[str]) -> bool:
    """A single-dash password flag's value (``-storepass …``), unless it is what a manual writes there: a stand-in
    (``[:env | :file]``, ``<password>``), a word and its punctuation (``-storepass option.``), troff
    (``isn\\[aq]t``)."""
    value = _value(match)
    word = value.rstrip(".,;:)]}>")
    return (_argument_value(match) and not value.startswith(("[", ":", "<", "(", "{")) and "\\" not in value
            and not (word.isalpha() and word.islower()))


_PROSE = re.compile(r"[a-z]+(?:[ \t]+[a-z]+)*")
_VARIABLE_START = re.compile(r"\$[{(A-Za-z_]|%[A-Za-z_]+%")


def _literal_value(match: re.Match[str]) -> bool:
    """A quoted or whole-line literal in a secret's place (a define, a QR code's field, a key's line) is one unless
    it is a placeholder, lower-case prose (``put your unique phrase here``) or a variable (``"$env:PW"``)."""
    value = _value(match).strip()
    return (len(value) >= 4 and not _PLACEHOLDER_VALUES.match(value) and not _PROSE.fullmatch(value)
            and not _VARIABLE_START.match(value))


def _erlang_cookie(match: re.Match[str]) -> bool:
    """A literal cookie (``_literal_value``: 20 upper-case letters are one, not a manual's stand-in), not the next
    flag (``-setcookie -name …``)."""
    return _literal_value(match) and not _value(match).startswith("-")


def _high_entropy(match: re.Match[str]) -> bool:
    return _high_entropy_text(_value(match))


def _high_entropy_text(value: str) -> bool:
    stripped = value.strip(".=-_/")
    return (len(stripped) >= 12 and not _code_or_path(stripped) and _entropy(stripped) >= MIN_ENTROPY
            and any(c.isdigit() for c in stripped) and any(c.isalpha() for c in stripped))


_COOKIE_VALUE = re.compile(r"=([^;,\s]{16,})")
_PUBLIC_NAME = re.compile(r"(?i)pub(?:lic|lishable)?[_\-. ]?\Z")


def _cookie_value(match: re.Match[str]) -> bool:
    """A cookie string is a credential when one of its values is long and random (a session id), not ``theme=dark``."""
    return any(_high_entropy_text(value) for value in _COOKIE_VALUE.findall(_value(match)))


_MIXED = (re.compile(r"\d[A-Za-z]"), re.compile(r"[A-Za-z]\d"))


def _random_token(match: re.Match[str]) -> bool:
    """A high-entropy value of 16+ characters, its digits among its letters (a random string, not a name ending in a
    number: ``LabelKey1``, ``MD5_KEY``, ``us-central1/keyRings``), one token (an ``=`` only as base64's padding, not
    ``<uuid>=/keyfile``), not an SSH public key's blob (``AAAAB3NzaC1…``)."""
    value = _value(match)
    return (_high_entropy(match) and len(value.strip(".=-_/")) >= 16 and all(m.search(value) for m in _MIXED)
            and "=" not in value.rstrip("=") and not value.startswith("AAAA"))


_TOKEN_RUN = re.compile(r"[0-9A-Za-z_\-]{20,}")


def _holds_random_run(match: re.Match[str]) -> bool:
    """A URL's tail holding a random run of 20+ token characters (a webhook's token), not ``12345678/pings``."""
    return any(_high_entropy_text(run) and all(m.search(run) for m in _MIXED)
               for run in _TOKEN_RUN.findall(_value(match)))


def _keyed_value(match: re.Match[str]) -> bool:
    """A random token (``_random_token``) given to a name ending in "key", unless the name says public
    (``public_key``, ``pubKey``)."""
    before = match.string[max(0, match.start() - 12):match.start()]
    return _random_token(match) and not _PUBLIC_NAME.search(before)


def _seed_words(match: re.Match[str]) -> bool:
    """A seed phrase is in lower case (the pattern ignores case for its cue word)."""
    return _value(match).islower()


def _user_password_pair(match: re.Match[str]) -> bool:
    """A base64 value that decodes to ``user:password`` (docker's "auth"), not ``"auth": "none"`` or a digest."""
    try:
        decoded = base64.b64decode(_value(match), validate=True).decode("utf-8")
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return False
    user, colon, password = decoded.partition(":")
    return bool(user and colon and password) and decoded.isprintable()


def _encoded_private_key(match: re.Match[str]) -> bool:
    """Base64 of a PEM block whose header names a private or secret key (a certificate's is kept)."""
    head = match.group(0)[:96]
    try:
        header = base64.b64decode(head[:len(head) // 4 * 4]).decode("ascii", "replace").split("-----")[1]
    except (ValueError, IndexError):
        return False
    return header.endswith(("PRIVATE KEY", "SECRET KEY BLOCK", "SECRET KEY"))


def _fold(text: str) -> str:
    """``text`` in lower case, each character to one: where a case-ignoring pattern matches a
    character to an ASCII letter, the letter in lower case. ``str.lower`` does so but for three:
    İ (to "i" and a combining dot), dotless ı and long ſ (kept), so these go first."""
    if text.isascii():
        return text.lower()
    return text.replace("\u0130", "i").replace("\u0131", "i").replace("\u017f", "s").lower()


def _needs(pattern: re.Pattern[str]) -> frozenset[str] | None:
    """What a rule's text must hold for the rule to run (``_Rule.needs``), without a string holding
    another of them ("passwd" holds "passw"). A pattern ignoring case does so by a leading ``(?i)``
    (any other way: None): it is read without it, its strings in lower case."""
    if not pattern.flags & re.IGNORECASE:
        found = required_substrings(pattern)
    else:
        plain = re.compile(pattern.pattern.removeprefix("(?i)"), pattern.flags & ~re.IGNORECASE)
        found = None if plain.flags & re.IGNORECASE else required_substrings(plain)
        if found is None or not all(part.isascii() for part in found):
            return None
        found = frozenset(part.lower() for part in found)
    return None if found is None else frozenset(p for p in found if not any(q != p and q in p for q in found))


# Sharper than _needs reads them (it keeps "gh" of "gh[pousr]_", "live"/"test" of "sk_(?:live|test)_"): each rule's
# fixed start or secret word spelt out whole, as its pattern has it, looked for once the derived set is found.
# tests/test_redact_prefilter.py checks every string is in every match found and that each is needed.
_NEEDS_SPELT_OUT: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    "gitlab-token": tuple(f"gl{infix}-" for infix in
                          "pat dt rt ptt ft imt agent oas soat cbt ffct wt rtr sa c".split()),
    "stripe-secret-key": ("sk_live_", "sk_test_"),
    "stripe-restricted-key": ("rk_live_", "rk_test_"),
    "grafana-token": ("glsa_", "glc_"),
    "cookie": ("cookie", "-b"),
    "keyed-value": ("key", "Key", "KEY"),
    "secret-assignment": SECRET_WORD_STRINGS,
    "secret-like-value": SECRET_WORD_STRINGS,
})


# A .pgpass line's "host:port:database:user:" has no literal but ":", which most texts with code, times or URLs
# hold; its ":port:database:user:" starts with ":", and Python's re skips from one ":" to the next (the rule then
# costs a fifth of what it did on LongMemEval turns: redaction_cost.py --prechecks). tests/test_redact_prefilter.py
# checks every match holds one.
_PRECHECKS: Mapping[str, re.Pattern[str]] = MappingProxyType({
    "pgpass-password": re.compile(r":(?:\d{1,5}|\*):[^\s:]{1,63}:[^\s:]{1,63}:"),
})
# Oracle's "user/password@" rule's strings ("conn", "exp", "imp"…) are in a third of LongMemEval's turns (connect,
# experience, important): its "/password@" starts with "/".
_PATTERN_PRECHECKS: Mapping[str, re.Pattern[str]] = MappingProxyType({
    ORACLE_USER_PASSWORD: re.compile(r"/[^\s/@\"']{1,128}@"),
})


def _rule(kind: str, pattern: re.Pattern[str], accept: Callable[[re.Match[str]], bool]) -> _Rule:
    spelt = _NEEDS_SPELT_OUT.get(kind)
    needs = tuple(strings for strings in (_needs(pattern), frozenset(spelt) if spelt else None) if strings)
    precheck = _PRECHECKS.get(kind) or _PATTERN_PRECHECKS.get(pattern.pattern)
    return _Rule(kind, pattern, accept, needs or None, bool(pattern.flags & re.IGNORECASE), precheck)


def _compile() -> tuple[_Rule, ...]:
    rules = [_rule(kind, re.compile(pattern, re.DOTALL if kind == "private-key" else 0), _always)
             for kind, pattern in PROVIDER_RULES]
    accept = {"secret-assignment": _assigned_value, "secret-like-value": _high_entropy,
              "authorization-header": _high_entropy, "connection-string-secret": _assigned_value,
              "command-line-password": _argument_value, "netrc-password": _argument_value,
              "cookie": _cookie_value, "keyed-value": _keyed_value, "npmrc-auth": _assigned_value,
              "docker-auth": _user_password_pair, "private-key": _encoded_private_key,
              "pgpass-password": _argument_value, "credential-setting": _assigned_value,
              "client-token": _random_token, "sk-api-key": _random_token, "seed-phrase": _seed_words,
              "webhook-url-token": _holds_random_run}
    accept_pattern = {USER_THEN_PASSWORD_FLAG: _login_password, USER_COLON_PASSWORD: _user_password_argument,
                      SESSION_EXPORT: _random_token, SINGLE_DASH_PASSWORD_FLAG: _single_dash_value,
                      JENKINS_AUTH: _user_password_argument, IFTTT_KEY: _argument_value,
                      ERLANG_COOKIE: _erlang_cookie}  # their own accepts, not their kind's
    accept_pattern.update(dict.fromkeys((SECURESTRING_PLAIN_TEXT, PHP_DEFINE_SECRET, C_DEFINE_SECRET, WIFI_QR_PASSWORD,
                                         NETSH_KEY_CONTENT, KEEPASS_PASSWORD_VALUE), _literal_value))
    rules += [_rule(kind, re.compile(pattern, re.MULTILINE), accept_pattern.get(pattern) or accept.get(kind, _always))
              for kind, pattern in GENERIC_RULES]
    return tuple(rules)


def without_prefilter(rules: Iterable[_Rule]) -> tuple[_Rule, ...]:
    """``rules`` each running on every text (what the prefilter must not change; for the tests and
    benchmarks/speed/redaction_cost.py)."""
    return tuple(replace(rule, needs=None, precheck=None) for rule in rules)


def _may_match(rule: _Rule, text: str, folded: str) -> bool:
    """False when ``text`` holds none of the strings of one of the sets every match of ``rule`` holds one of, or
    no match of its precheck."""
    if rule.needs is None:
        return True
    haystack = folded if rule.folded else text
    for strings in rule.needs:
        for part in strings:  # loops, not any() over a generator: this runs ~50 times a call, on short texts too
            if part in haystack:
                break
        else:
            return False
    return rule.precheck is None or rule.precheck.search(text) is not None


RULES: tuple[_Rule, ...] = _compile()
KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in RULES)) + (PRIVATE_KIND,)


def _spans(text: str, rules: Iterable[_Rule]) -> list[tuple[int, int, int, str]]:
    """(start, end, rule order, kind) of every secret the rules find in ``text``."""
    found = []
    folded = _fold(text)
    for order, rule in enumerate(rules):
        if not _may_match(rule, text, folded):
            continue
        for match in rule.pattern.finditer(text):
            group = "secret" if "secret" in rule.pattern.groupindex else 0
            start, end = match.span(group)
            if start < end and rule.accept(match):
                found.append((start, end, order, rule.kind))
    return found


_PLACEHOLDER_FOUND = re.compile(r"\[redacted: ([a-z0-9-]{1,40})\]")


def placeholder_counts(text: str) -> dict[str, int]:
    """The placeholders ``redact`` left in ``text``, by kind (a part of a text redacted whole)."""
    return dict(sorted(Counter(_PLACEHOLDER_FOUND.findall(text)).items()))


def redaction_note(findings: dict[str, int]) -> dict[str, object]:
    """What ``metadata.redacted`` says of ``findings``: how many, and of which kinds."""
    return {"count": sum(findings.values()), "kinds": dict(sorted(findings.items()))}


def strip_private(text: str) -> tuple[str, int]:
    """``text`` without its ``<private>…</private>`` regions (an unclosed one: to the end); how many."""
    return _PRIVATE.subn("", text)


def find_secrets(text: str) -> dict[str, int]:
    """What ``redact`` would replace in ``text`` (private regions aside), by kind."""
    return redact(text, private=False).findings


def redact(text: str, *, private: bool = True) -> Redaction:
    """``text`` with private regions cut (``private=True``) and each secret replaced by
    ``[redacted: <kind>]``; the findings count each kind."""
    return redact_with_rules(text, RULES, private=private)


def redact_with_rules(text: str, rules: tuple[_Rule, ...], *, private: bool = True) -> Redaction:
    """``redact`` by ``rules`` (``RULES``, or them ``without_prefilter``: the tests compare the two)."""
    findings: Counter[str] = Counter()
    if private:
        text, cut = strip_private(text)
        if cut:
            findings[PRIVATE_KIND] = cut
    spans = sorted(_spans(text, rules), key=lambda s: (s[0], s[2], -s[1]))
    pieces: list[str] = []
    position = 0
    for start, end, _, kind in spans:
        if start < position:  # inside a secret already replaced
            continue
        pieces += [text[position:start], _PLACEHOLDER.format(kind)]
        findings[kind] += 1
        position = end
    pieces.append(text[position:])
    return Redaction("".join(pieces) if spans else text, dict(sorted(findings.items())))


MAX_METADATA_DEPTH = 32  # deeper metadata is refused by validation anyway; not walked further here


def _redact_value(value: object, found: Counter[str], depth: int) -> object:
    if isinstance(value, str):
        result = redact(value)
        found.update(result.findings)
        return result.text
    if depth >= MAX_METADATA_DEPTH:
        return value
    if isinstance(value, dict):
        return {key: _redact_value(item, found, depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_value(item, found, depth + 1) for item in value]
    return value


_TAG_SEPARATORS = re.compile(r"[,;\s]+")  # how the store splits a tags string


def _redact_tags(value: object, found: Counter[str]) -> object:
    """Tags without those holding a credential (a tag is one word: it is dropped, not rewritten)."""
    parts = [p for p in _TAG_SEPARATORS.split(value) if p] if isinstance(value, str) else value
    if not isinstance(parts, list):
        return value  # another type: validation refuses it
    kept = []
    for tag in parts:
        result = redact(tag) if isinstance(tag, str) else None
        if result is not None and result.findings:
            found.update(result.findings)
            continue
        kept.append(tag)
    return value if isinstance(value, str) and len(kept) == len(parts) else kept


def redact_fields(fields: Mapping[str, Any]) -> tuple[dict[str, Any], Counter[str]]:
    """``fields`` of a memory with the text of ``content``, ``summary``, ``tags`` and
    ``metadata`` redacted (what is given of them), and what was found, by kind."""
    found: Counter[str] = Counter()
    out = dict(fields)
    for name in ("content", "summary"):
        if isinstance(out.get(name), str):
            result = redact(out[name])
            found.update(result.findings)
            out[name] = result.text
    if "tags" in out:
        out["tags"] = _redact_tags(out["tags"], found)
    if isinstance(out.get("metadata"), dict):
        out["metadata"] = _redact_value(out["metadata"], found, 0)
    return out, found


def _with_note(out: dict[str, Any], found: Counter[str]) -> dict[str, Any]:
    if isinstance(out.get("content"), str) and not out["content"].strip():
        raise ValidationError("content: nothing is left to store once its <private> regions are removed")
    metadata = out.get("metadata")
    if found and (metadata is None or isinstance(metadata, dict)):  # another type: validation refuses it
        out["metadata"] = {**(metadata or {}), "redacted": redaction_note(found)}
    return out


def redact_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A memory to store (``content``, ``metadata``, ``tags``…) with its text redacted
    (``redact_fields``); ``metadata.redacted`` then says how many secrets of each kind were
    replaced. A content that is not a string is left for validation to refuse; one that
    redaction empties (all of it ``<private>``) is refused here, naming the field."""
    if not isinstance(item.get("content"), str):
        return dict(item)
    return _with_note(*redact_fields(item))


def _asked(redact_them: object) -> bool:
    if not isinstance(redact_them, bool):
        raise ValidationError(f"'redact' must be true or false, got {redact_them!r}")
    return redact_them


def redact_items(items: list[Mapping[str, Any]], redact_them: object) -> list[Mapping[str, Any]]:
    """``redact_item`` of each, when ``redact_them`` (a bool, checked) says so."""
    return [redact_item(item) for item in items] if _asked(redact_them) else items


def redact_update(fields: Mapping[str, Any], redact_them: object) -> tuple[dict[str, Any], Counter[str]]:
    """The fields of an ``update`` redacted as ``redact_item`` does, when ``redact_them`` (a
    bool, checked) says so, and what was found by kind. ``metadata.redacted`` is written only
    when the update gives ``metadata`` (it would otherwise replace the memory's)."""
    if not _asked(redact_them):
        return dict(fields), Counter()
    out, found = redact_fields(fields)
    return _with_note(out, found if "metadata" in fields else Counter()), found
