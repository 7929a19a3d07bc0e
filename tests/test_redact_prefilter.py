"""Redaction's literal prefilter (localmem/privacy/redact.py, issue 44): a rule runs only on a text holding
one of the strings every match of it contains, and ``redact`` answers as with every rule running."""

from __future__ import annotations

import base64
import random
import re
from dataclasses import replace

import pytest

from localmem.privacy import redact
from localmem.privacy.patterns import SECRET_WORD, SECRET_WORD_STRINGS
from localmem.privacy.redact import RULES, _fold, _may_match, redact_with_rules, without_prefilter

from benchmarks.common.credential_corpus import corpus
from benchmarks.common.regex_samples import mangle_case, sample

SAMPLES_PER_RULE = 150
PROSE = ("I moved to Leeds last spring and the password manager my sister set up still asks for a token "
         "every morning. Our API client retries; the access log shows 3:00 timeouts = 42% of calls. "
         "Author: Mel. Private note: the master branch is frozen. Kansas disaster relief, sas, dsn, "
         "signing day, encryption at rest, credentials: see the wiki.").split(" ")
HOSTILE = ["\x00", "\ud800", "\u0130", "\u0131", "\u017f", "\u212a", "\u00e9", "\u4e2d", "\U0001f600", "\n", "\t",
           "=", ":", "-", ".", "_", "'", '"', "[redacted: jwt]", "[redacted: github-token]", "${API_KEY}",
           "<your-token>", "xxx", "changeme", "eyJ", "sk-", "AKIA", "://", "@", "/"]
OPENERS, CLOSERS = " =:\"(", " ;\"),."


def _rule_samples(index: int, count: int = SAMPLES_PER_RULE) -> list[str]:
    """Texts each holding a candidate match of rule ``index`` (its case mangled when it ignores case),
    set among prose and hostile pieces, or alone, at the text's very edges."""
    rule = RULES[index]
    rng = random.Random(1000 + index)
    texts = []
    for n in range(count):
        piece = sample(rule.pattern, rng)
        if rule.folded:
            piece = mangle_case(piece, rng)
        if n % 3 == 0:
            texts.append(piece)
        else:
            before = " ".join(rng.choice(PROSE + HOSTILE) for _ in range(rng.randint(0, 6)))
            after = " ".join(rng.choice(PROSE + HOSTILE) for _ in range(rng.randint(0, 6)))
            texts.append(before + rng.choice(OPENERS) + piece + rng.choice(CLOSERS) + after)
    return texts


def _corpus_texts() -> list[str]:
    return [text for _, _, text in corpus(per_format=8)]


def _mixed_texts(seed: int, count: int) -> list[str]:
    """A seeded random mix: prose, corpus credentials, rule samples, hostile pieces, case mangled."""
    rng = random.Random(seed)
    credentials = _corpus_texts()
    pieces = PROSE + HOSTILE
    texts = []
    for _ in range(count):
        parts = []
        for _ in range(rng.randint(1, 12)):
            roll = rng.random()
            if roll < 0.15:
                parts.append(rng.choice(credentials))
            elif roll < 0.35:
                parts.append(sample(rng.choice(RULES).pattern, rng))
            else:
                parts.append(rng.choice(pieces))
        text = rng.choice([" ", "", "\n", "="]).join(parts)
        texts.append(mangle_case(text, rng) if rng.random() < 0.3 else text)
    return texts


def _same(text: str, rules: tuple) -> bool:
    return redact_with_rules(text, rules) == redact_with_rules(text, without_prefilter(rules))


def test_every_rule_has_a_prefilter():
    assert all(rule.needs for rule in RULES), [rule.kind for rule in RULES if not rule.needs]
    assert {rule.kind for rule in RULES if rule.folded} == {
        "connection-string-secret", "authorization-header", "secret-assignment", "secret-like-value", "cookie",
        "credential-setting", "seed-phrase", "command-line-password"}  # db2's, PowerShell's, NickServ's ignore case


def test_every_secret_word_holds_one_of_its_spelt_strings():
    """The generic rules' credential words are a finite set: all of them, drawn until no new one comes."""
    rng = random.Random(5)
    words = {sample(re.compile(SECRET_WORD), rng) for _ in range(5000)}
    # 10 single words (passwd, password, pw, credential(s)…), 4 spellings of 11 pairs (api key, auth token…)
    assert len(words) == 54
    for word in words:
        assert any(part in word for part in SECRET_WORD_STRINGS), word


@pytest.mark.parametrize("index", range(len(RULES)), ids=[f"{i}-{r.kind}" for i, r in enumerate(RULES)])
def test_every_match_holds_one_of_its_rules_strings(index):
    rule = RULES[index]
    texts = _rule_samples(index) + _corpus_texts() + _mixed_texts(index, 40)
    matches = [m.group(0) for text in texts for m in rule.pattern.finditer(text)]
    assert len(matches) >= 15, "the samples must reach the rule"
    for found in matches:
        haystack = _fold(found) if rule.folded else found
        assert all(any(part in haystack for part in strings) for strings in rule.needs), (rule.kind, found)
        assert rule.precheck is None or rule.precheck.search(found), (rule.kind, found)


PGPASS = next(rule for rule in RULES if rule.kind == "pgpass-password")


@pytest.mark.parametrize("text", [
    "meeting moved from 10:30 to 11:45, dial in at 12:00:00", "see https://git.acme.dev:8443/a:b:c:d",
    "Traceback: File \"x.py\", line 3: KeyError: 'a': 'b'",
    "arn:aws:iam::123456789012:role/deploy", "00:1a:2b:3c:4d:5e",
])
def test_the_pgpass_rule_skips_texts_with_colons_but_no_port_field(text):
    """Its only string is ":", so it ran on every text holding one; its precheck (":port:database:user:")
    now skips these."""
    assert ":" in text and not _may_match(PGPASS, text, _fold(text))
    assert redact(text) == redact_with_rules(text, without_prefilter(RULES))


@pytest.mark.parametrize("line", ["db.internal:5432:app:deploy:Zq8v#Lm2x", "*:*:*:postgres:S3cr3t\\:pw",
                                  "  localhost:*:shop:app:hunter2hunter2"])
def test_the_pgpass_rule_still_runs_on_its_lines(line):
    assert _may_match(PGPASS, line, _fold(line))
    assert redact(line).findings == {"pgpass-password": 1}


def test_fold_maps_every_character_as_a_case_ignoring_pattern_does():
    letters = sorted({c for rule in RULES if rule.folded for strings in rule.needs for part in strings for c in part})
    either = re.compile("(?i)[" + re.escape("".join(letters)) + "]")
    for code in range(0x110000):
        char = chr(code)
        assert len(_fold(char + "\u00e9")) == 2  # one character to one, in a non-ASCII text too
        if either.fullmatch(char):
            for letter in letters:
                if re.fullmatch("(?i)" + re.escape(letter), char):
                    assert _fold(char + "\u00e9")[0] == _fold(char)[0] == letter, (hex(code), letter)


def test_the_answer_is_the_same_with_and_without_the_prefilter():
    texts = _corpus_texts() + _mixed_texts(7, 1500)
    texts += [t for i in range(len(RULES)) for t in _rule_samples(i, 30)]
    for text in texts:
        assert _same(text, RULES), text
    assert sum(1 for t in texts if redact(t).findings) > 800  # the texts hold many secrets


@pytest.mark.parametrize("text", [
    "", "\x00" * 10, "token=" + "\x00" * 50 + "A1b2C3d4E5f6G7h8", "a" * 1_000_000,
    "password: " + "Xy9" * 333_333, ("eyJhbGciOi-" * 1000 + ".eyJzdWIiOiIx." + "z" * 20) * 50,
    "AKIA" + "Q" * 16, "x AKIAQQQQQQQQQQQQQQQQ", "PASSWORD=Hunter2Hunter2", "pa\u017f\u017fword = Tr0ub4dor&3xx",
    "CREDENT\u0130AL: 9f8e7d6c5b4a3f2e1d0c", "api\u212aey=Zq8#Lm2$Wx7!", "\u0131" * 10 + "secret=Tr0ub4dor&3",
    "[redacted: jwt] token [redacted: github-token] = ${SECRET}",
])
def test_hostile_texts_answer_the_same(text):
    assert _same(text, RULES)


# The derived set (the first) of the two generic rules holds "client", only ever in "client secret", which holds
# "secret": without it the rules find the same.
REDUNDANT = {("secret-assignment", 0): {"client"}, ("secret-like-value", 0): {"client"}}


# Rules whose acceptance decodes base64 (docker's "auth" to user:password, a PEM header naming a private key) or
# wants lower case (a seed phrase): a random sample of the pattern never does, and real matches are added to its
# samples.
DECODED = {"docker-auth": ['{"auth": "' + base64.b64encode(b"ci:S3cr3tPass9").decode() + '"}'],
           "private-key": [base64.b64encode(b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBx9f\n").decode()],
           # a seed phrase is accepted in lower case only, which a random sample of its pattern almost never is
           "seed-phrase": [f"{cue}: {' '.join(['abandon', 'ability', 'able', 'about'] * 3)}"
                           for cue in ("mnemonic", "seed", "phrase")],
           # a webhook's token is a random run of 20+ letters and digits, which a random sample's tail seldom holds
           "webhook-url-token": [f"https://chat.acme.dev/{segment}/k3x9q2m7w1z8p4r6t0y5u2i8o1"
                                 for segment in ("hooks", "webhook", "webhooks", "webhookb2")]}


def test_a_rule_missing_one_of_its_strings_is_caught():
    """Each of a rule's sets without any one of its strings: the rule alone then redacts some sample
    holding that string differently, so the tests above fail on a set missing a string the rule needs."""
    for index, rule in enumerate(RULES):
        texts = _rule_samples(index, 60 * max(map(len, rule.needs))) + DECODED.get(rule.kind, [])  # a third bare
        for which, strings in enumerate(rule.needs):
            for part in strings - REDUNDANT.get((rule.kind, which), set()):
                cut = replace(rule, needs=tuple(s - {part} if n == which else s for n, s in enumerate(rule.needs)))
                alone = [t for t in texts if not _may_match(cut, t, _fold(t))]
                assert any(redact_with_rules(t, (cut,)) != redact_with_rules(t, (rule,)) for t in alone), (
                    rule.kind, part)
