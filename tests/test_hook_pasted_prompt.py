"""A prompt that pastes a log, a traceback or a diff around its question: recall is asked the question (the prose
the capture rules' shape test keeps once the dumps are cut), not the first 1,000 characters of the paste.

Driven as Claude Code drives it: ``localmem hook UserPromptSubmit`` in a subprocess, the payload on stdin.
"""

from __future__ import annotations

from tests.hook_helpers import payload, run_hook
from tests.test_hook_inject import STAGING, STAGING_PROMPT, context_of, seeded

LOG = "".join(f"2026-12-06T09:{n // 60 % 60:02d}:{n % 60:02d}Z INFO worker-{n % 8} "
              f"GET /api/v2/items/{n * 7919 % 99991} 200 {n % 97} ms trace={n * 2654435761 % 2**32:08x}\n"
              for n in range(400))


def _ask(tmp_path, text):
    return run_hook(seeded(tmp_path), "UserPromptSubmit", payload("user_prompt_submit", tmp_path, prompt=text),
                    LOCALMEM_HOOK_VERBOSE="1")


def test_a_question_after_a_pasted_log_is_what_recall_is_asked(tmp_path):
    assert len(LOG) > 20_000
    answer, err = _ask(tmp_path, LOG + "\n" + STAGING_PROMPT)
    assert STAGING in context_of(answer, "UserPromptSubmit"), err
    assert "recall asked the prompt's prose" in err


def test_a_question_before_a_pasted_log_is_what_recall_is_asked(tmp_path):
    answer, err = _ask(tmp_path, STAGING_PROMPT + "\n\n" + LOG)
    assert STAGING in context_of(answer, "UserPromptSubmit"), err


def test_a_paste_with_no_question_is_asked_as_before_and_injects_nothing(tmp_path):
    answer, err = _ask(tmp_path, LOG)
    assert answer is None and "recall asked the prompt's prose" not in err
