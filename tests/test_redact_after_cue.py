"""A credential given in the message after the one that asks for it or names it (issue 40): "my db password is"
then a message that is just the password. The innocent pairs were written before the rule."""

from __future__ import annotations

import pytest

from localmem.privacy import redact_after
from tests.hook_helpers import payload, run_hook, transcript_copy
from tests.test_hook_capture import append, memories, user_line
from tests.test_privacy_hooks import raw_bytes

SECRET = "S3cretValue!9x"

# (previous message, this message): the second holds a credential the first names or asks for.
CUED = [
    ("what's the db password?", SECRET),
    ("my db password is", SECRET),
    ("My DB password is:", f"`{SECRET}`"),
    ("Please paste your API key.", "8f3cA91bQz7LkW2e"),
    ("Sure, I can check the deploy. What is the token?", "ghx7Pq2LmZ9aT4wK"),
    ("the wifi pw =", "hunter2!"),
    ("ok, the staging password, here it is", SECRET),
    ("what's the db password?", f"sure, it's {SECRET}"),
    ("what's the db password?", f"here: {SECRET}"),
]

# Written before the rule: a cue word that is not a cue, or a reply that is not a credential.
INNOCENT = [
    ("what's your password policy?", "12 characters"),
    ("token count?", "4096"),
    ("the secret is", "consistency"),
    ("the key change is", "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"),
    ("what's the db password?", "I don't know it, ask Dana"),
    ("what's the db password?", "it's in the vault under prod/db"),
    ("my db password is", "the same as last week"),
    ("can you run the tests?", SECRET),
    ("where did you put the password file?", "~/secrets/db.txt"),
    ("what's the token limit?", "8k"),
    ("The password reset worked, thanks.", "great, v2.3.1-rc4 is out too"),
    ("what's the db password?", "${DB_PASSWORD}"),
    ("I rotated the API key yesterday.", "Good; commit 9f8e7d6c5b4a then?"),
    (None, SECRET),
    ("", SECRET),
]


@pytest.mark.parametrize("previous, text", CUED)
def test_a_value_given_after_its_cue_is_redacted(previous, text):
    result = redact_after(previous, text)
    value = text.split()[-1].strip("`")
    assert value not in result.text
    assert result.findings == {"credential-after-cue": 1}


@pytest.mark.parametrize("previous, text", INNOCENT)
def test_a_reply_that_is_not_a_credential_or_has_no_cue_is_kept(previous, text):
    assert redact_after(previous, text).text == text


def test_the_message_s_own_rules_still_apply_without_a_cue():
    result = redact_after("hello", "use sk_live_4eC39HqLyjWDarjtT1zdp7dc please")
    assert result.findings == {"stripe-secret-key": 1}


def test_only_the_end_of_the_previous_message_is_a_cue():
    assert redact_after("my db password is fine now. Anyway, look at the build", SECRET).text == SECRET


def _line(uuid: str, role: str, text: str, second: int) -> dict:
    line = user_line(uuid, text, timestamp=f"2026-11-28T10:00:{second:02d}.000Z")
    if role == "assistant":
        line["type"] = "assistant"
        line["message"] = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return line


def test_a_password_pasted_after_the_assistant_asked_is_in_no_byte_of_the_database(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    append(transcript, _line("c0ffee00-0101-4e5f-9a7b-3c2d1e0f9a98", "user",
                             "The staging deploy fails to reach postgres, can you look?", 50),
           _line("c0ffee00-0102-4e5f-9a7b-3c2d1e0f9a98", "assistant",
                 "I can test the connection myself. Please paste your db password.", 51))
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))  # the ask is captured in one run
    append(transcript, _line("c0ffee00-0103-4e5f-9a7b-3c2d1e0f9a98", "user", SECRET, 52))
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))  # the answer in the next
    stored = [m for m in memories(db) if m["metadata"]["message_uuid"].startswith("c0ffee00-0103")]
    assert len(stored) == 1, err
    assert stored[0]["content"] == "[redacted: credential-after-cue]"
    assert stored[0]["metadata"]["redacted"] == {"count": 1, "kinds": {"credential-after-cue": 1}}
    assert SECRET.encode() not in raw_bytes(db)


def test_a_cue_and_its_answer_in_one_run_are_paired_too(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    append(transcript, _line("c0ffee00-0201-4e5f-9a7b-3c2d1e0f9a98", "user", "my db password is", 50),
           _line("c0ffee00-0202-4e5f-9a7b-3c2d1e0f9a98", "user", SECRET, 51))
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    assert any(m["content"] == "my db password is" for m in memories(db)), err
    assert SECRET.encode() not in raw_bytes(db)


# Consecutive manual-page lines the first version of the rule took (benchmarks/safety/redaction_heldout.py): names.
@pytest.mark.parametrize("previous, text", [
    ("The user will only be required to enter their password.", "security-key"),
    ("caching behavior is only available for user credentials.", "--browser"),
    ("passwd,", "pkcs12,"),
    ("AUTH must be one of: none, gce-vm, access-token,", "scram-sha-256."),
    ("Failure involving user credentials.", "PAM_NEW_AUTHTOK_REQD"),
    ("password,", "open_session"),
    ("Retrieve and store user credentials.", "git-credential-cache(1)"),
    ("NIS RPC is used for setting new passwords.", "remember=n"),
    ("Remove all secrets.", "--set-secrets=[KEY=VALUE,...]"),
])
def test_a_name_after_a_cue_is_kept(previous, text):
    assert redact_after(previous, text).text == text
