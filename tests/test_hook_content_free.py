"""A prompt with nothing to look up injects nothing, and chit-chat notes are never injected on a prompt (issue 40).

Driven through ``localmem hook UserPromptSubmit`` in a subprocess, as Claude Code runs it, on one store with the
hash embedder. The hook's floor is set to 0 here, so every prompt recall answers would inject its first note: what
keeps a prompt quiet is the rule under test, not a low relevance.
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore
from localmem.hooks.content_free import CHOICE, COURTESY, NOTE_REASONS, SHORT, nothing_to_look_up
from localmem.hooks.noise_rules import DEFAULT_RULES, compile_rules
from localmem.hooks.selection import KEPT, Candidate, StandOut, choose, choose_injectable
from tests.content_free_prompts import CONTENT, CONTENT_FREE
from tests.hook_helpers import hook_env, payload, run_hook

NOTES = (
    "Decision: the orders service moves from MongoDB to PostgreSQL 16; all new tables go there.",
    "Preference: never use unittest, always pytest with plain asserts, for tests in this repo.",
    "Releases are tagged vX.Y.Z and published on Fridays; go ahead and tag one after the tests pass.",
    "Option 2 of the migration plan: copy the tables first, then switch the reads, 1 then 2 then 3.",
)
ACKNOWLEDGEMENTS = ("ok, thanks", "Sure, go ahead.", "yes please")
BARE_QUESTION = "Should the nightly billing export run before or after the invoice batch?"
TRACEBACK = """Traceback (most recent call last):
  File "/srv/orders/app/db.py", line 41, in connect
    pool = await asyncpg.create_pool(dsn=settings.database_url, min_size=2)
ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 5432)"""
LOOSE = {"LOCALMEM_HOOK_RELEVANCE_FLOOR": "0", "LOCALMEM_HOOK_VERBOSE": "1"}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("content-free")
    db = tmp / "m.db"
    with MemoryStore(db, embedder="hash") as memories:
        for text in NOTES + ACKNOWLEDGEMENTS + (TRACEBACK, BARE_QUESTION):
            memories.store(text, tags=["project:orchid"])
    return db, tmp


def ask(store: tuple[Path, Path], prompt: str, session: str, **env: str) -> tuple[dict | None, str]:
    db, tmp = store
    session = hashlib.sha256(session.encode()).hexdigest()[:16]  # a fresh session per question, a valid id
    return run_hook(db, "UserPromptSubmit", payload("user_prompt_submit", tmp, prompt=prompt, session_id=session),
                    **{**LOOSE, **env})


@pytest.mark.parametrize("prompt, reason", [("y", SHORT), ("no", SHORT), ("go on", COURTESY), ("ok do it", COURTESY),
                                            ("2)", SHORT), ("(b)", CHOICE), ("2 please", CHOICE),
                                            ("...", "no letter or digit")])
def test_a_content_free_prompt_injects_nothing_and_recall_is_not_asked(store, prompt, reason):
    out, err = ask(store, prompt, f"free-{prompt}")
    assert out is None, err
    assert reason in err
    assert "floor" not in err and "relevance" not in err  # no thresholds line, no candidate: recall was not asked


@pytest.mark.parametrize("prompt", ["which database does the orders service use?", "no, use postgres instead",
                                    "go ahead and tag the release", "option 2 of the migration plan", "数据"])
def test_a_content_prompt_is_looked_up_and_injects(store, prompt):
    out, err = ask(store, prompt, f"content-{prompt}")
    assert out is not None, err
    assert "nothing to look up" not in err


def test_a_courtesy_note_is_never_injected_on_a_prompt(store):
    # Every note may go in (cap 8, no margin, floor 0): the acknowledgements are recalled and left out by the rule.
    out, err = ask(store, "ok thanks, go ahead with the tests and say yes please to the release", "acks",
                   LOCALMEM_HOOK_MAX_MEMORIES="8", LOCALMEM_HOOK_STANDOUT_MARGIN="0")
    block = out["hookSpecificOutput"]["additionalContext"]
    assert NOTE_REASONS["courtesy"] in err  # recalled, and marked as chit-chat
    for text in ACKNOWLEDGEMENTS:
        assert f"] {text}\n" not in block, block
    assert "Releases are tagged" in block


def test_a_code_or_log_note_is_never_injected_on_a_prompt(store):
    out, err = ask(store, "why does connect fail with ConnectionRefusedError from asyncpg create_pool in db.py?",
                   "traceback", LOCALMEM_HOOK_MAX_MEMORIES="8", LOCALMEM_HOOK_STANDOUT_MARGIN="0")
    assert NOTE_REASONS["code_or_log"] in err  # recalled, and marked as code or log
    assert out is None or "Traceback" not in out["hookSpecificOutput"]["additionalContext"]


def test_a_bare_question_note_is_injected_only_where_capture_would_keep_it(store, tmp_path):
    prompt = "when does the nightly billing export run, before the invoice batch?"
    out, err = ask(store, prompt, "bare", LOCALMEM_HOOK_MAX_MEMORIES="8", LOCALMEM_HOOK_STANDOUT_MARGIN="0")
    assert NOTE_REASONS["bare_question"] in err  # recalled, and marked as a bare question
    assert out is None or BARE_QUESTION not in out["hookSpecificOutput"]["additionalContext"]
    keeping = tmp_path / "keep-questions.json"
    keeping.write_text(json.dumps({"skip_bare_questions": False}))
    out, err = ask(store, prompt, "bare-kept", LOCALMEM_HOOK_MAX_MEMORIES="8", LOCALMEM_HOOK_STANDOUT_MARGIN="0",
                   LOCALMEM_HOOK_RULES_PATH=str(keeping))
    assert out is not None and BARE_QUESTION in out["hookSpecificOutput"]["additionalContext"], err


def test_the_rules_files_courtesy_list_decides(store, tmp_path):
    words = list(DEFAULT_RULES["courtesy_words"])
    edited = tmp_path / "rules.json"
    edited.write_text(json.dumps({"courtesy_words": [w for w in words if w != "continue"] + ["ship"]}))
    out, err = ask(store, "ship it", "ship-default")
    assert "nothing to look up" not in err and "floor" in err  # "ship" is not an acknowledgement by default
    out, err = ask(store, "ship it", "ship-edited", LOCALMEM_HOOK_RULES_PATH=str(edited))
    assert out is None and COURTESY in err
    _, err = ask(store, "continue", "continue-edited", LOCALMEM_HOOK_RULES_PATH=str(edited))
    assert "nothing to look up" not in err and "floor" in err  # taken off the list: looked up


def test_a_bad_rules_file_is_refused_by_name_on_a_prompt(store, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"courtesy_words": "ok"}))
    out, err = ask(store, "which database does the orders service use?", "bad-rules",
                   LOCALMEM_HOOK_RULES_PATH=str(bad))
    assert out is None and "courtesy_words" in err


def test_the_rule_reads_the_probe_set():
    """No ordinary prompt is taken for content-free; the issue's cases are."""
    rules = compile_rules({})
    assert [p for p in CONTENT if nothing_to_look_up(p, rules)] == []
    for prompt in ("y", "no", "go on", "1", "3)", "a", "ok do it", "lgtm", "continue", "yes"):
        assert prompt in CONTENT_FREE and nothing_to_look_up(prompt, rules), prompt
    for prompt in ("no, Postgres", "it's 3.12", "no, use postgres", "2, but with a feature flag"):
        assert nothing_to_look_up(prompt, rules) is None, prompt  # a name, a version, words of its own


def test_shapes_read_where_they_decide_keep_what_reading_every_shape_keeps():
    """``choose_injectable`` asks for a note's shape only where it can change the choice; what it keeps must be what
    ``choose`` keeps once every refused note is out, for any rule (random pools, rules and refusals)."""
    rng = random.Random(40)
    for _ in range(4000):
        n = rng.randint(0, 10)
        ranks = rng.sample(range(1, n + 1), n)
        spec = [(f"m{i}", rng.choice([rng.random(), 0.85 + 0.1 * rng.random()]),
                 None if rng.random() < 0.1 else ranks[i], None if rng.random() < 0.1 else 0.1 + rng.random())
                for i in range(n)]
        refused = {m for m, *_ in spec if rng.random() < 0.35}
        rule = StandOut(rng.choice([0.5, 0.9]), rng.choice([0.0, 0.05]), rng.choice([1.0, 0.1]), rng.choice([1, 2, 3]),
                        rng.choice(["recall", "relevance"]), rng.choice([0.0, None, 0.95]), rng.choice([0.0, 0.7]))
        every = [Candidate(m, r, {}, rank=k, score=sc) for m, r, k, sc in spec]
        for candidate in every:
            candidate.reason = "refused" if candidate.memory_id in refused else ""
        choose([c for c in every if not c.reason], rule)
        where = [Candidate(m, r, {}, rank=k, score=sc) for m, r, k, sc in spec]
        choose_injectable(where, rule, lambda c: "refused" if c.memory_id in refused else None)
        assert ({c.memory_id for c in where if c.reason == KEPT} == {c.memory_id for c in every if c.reason == KEPT}), \
            (spec, refused, rule)


@pytest.mark.model
def test_the_issues_prompts_with_the_real_model(tmp_path):
    """The lead's probe: "go on", "y", "no", "1" injected a note on the orders store; a content prompt still does."""
    from tests.test_hook_inject_cases import orders_store

    db = orders_store(tmp_path)
    cases = (("go on", None), ("y", None), ("no", None), ("1", None), ("run the tests", "pytest"))
    for number, (prompt, wanted) in enumerate(cases):
        body = {"session_id": f"s-{number}", "cwd": str(tmp_path / "orders"), "prompt": prompt,
                "hook_event_name": "UserPromptSubmit"}
        proc = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "auto", "hook",
                               "UserPromptSubmit", "--no-forward", "-v"], input=json.dumps(body), capture_output=True,
                              text=True, encoding="utf-8", env=hook_env(), timeout=300, check=False)
        assert proc.returncode == 0, proc.stderr
        if wanted is None:
            assert proc.stdout.strip() == "" and "nothing to look up" in proc.stderr, (prompt, proc.stderr)
        else:
            assert wanted in proc.stdout, (prompt, proc.stderr)


@pytest.mark.parametrize("prompt", ["数据", "数", "1 数", "キー"])
def test_a_word_of_one_or_two_characters_in_another_script_is_looked_up(prompt):
    # "data", "number": in Chinese or Japanese one or two characters are a word, not a "y" or a menu's "b)".
    assert nothing_to_look_up(prompt, compile_rules({})) is None
