"""Privacy through the hooks, run as Claude Code runs them (subprocesses): pasted credentials are
stored redacted and never injected; <private> regions are never stored; a project can turn capture off."""

from __future__ import annotations

import json
from pathlib import Path

from localmem import MemoryStore
from tests.hook_helpers import SESSION, payload, project_dir_path, run_hook, transcript_copy
from tests.test_hook_capture import append, memories, user_line

DB_PASSWORD = "pr0d-Db-Pa55w0rd-7731"
WEBHOOK_SECRET = "whsec_" + "Zq8RkT2mWx4Ls9Vb1Nc7Hd3Fg6Jp5Ye0"
AWS_KEY = "AKIA" + "Q7RZ4MXB2KD9PLW3"
# In prose, as a person pastes values into a question (an .env block alone is cut by capture's
# code/log rule before redaction sees it; the prose around it is what is stored).
PASTED_ENV = (f"Our production webhook fails. The database is postgres://orchid:{DB_PASSWORD}@db.orchid.internal"
              f":5432/orchid, the Stripe webhook secret is {WEBHOOK_SECRET} and the deploy uses the AWS key "
              f"{AWS_KEY}. Why does the production webhook fail?")


def raw_bytes(db: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))


def test_pasted_credentials_are_stored_redacted_everywhere_in_the_file(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    append(transcript, user_line("c0ffee00-0001-4e5f-9a7b-3c2d1e0f9a99", PASTED_ENV))
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    pasted = [m for m in memories(db) if "production webhook fails" in m["content"]]
    assert len(pasted) == 1, err
    content = pasted[0]["content"]
    assert "[redacted: url-password]" in content and "[redacted: stripe-webhook-secret]" in content
    assert "[redacted: aws-access-key-id]" in content and "Why does the production webhook fail?" in content
    assert pasted[0]["metadata"]["redacted"] == {
        "count": 3, "kinds": {"aws-access-key-id": 1, "stripe-webhook-secret": 1, "url-password": 1}}
    data = raw_bytes(db)  # row, FTS shadow tables, vectors, dedup keys: none was made from the secret
    for secret in (DB_PASSWORD, WEBHOOK_SECRET, AWS_KEY):
        assert secret.encode() not in data


def test_private_regions_are_never_stored_and_an_unclosed_one_drops_the_rest(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    append(transcript,
           user_line("c0ffee00-0002-4e5f-9a7b-3c2d1e0f9a98",
                     "Remember the orchid deploy window is Tuesday. <private>My therapist is Dr Alvarez-Quinn."
                     "</private> Also the canary runs at 10:00."),
           user_line("c0ffee00-0003-4e5f-9a7b-3c2d1e0f9a97",
                     "The orchid launch is on the 14th. <private>Salary band for Priya is 184k-Zephyr"))
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    texts = [m["content"] for m in memories(db)]
    assert any("deploy window is Tuesday" in t and "canary runs at 10:00" in t for t in texts)
    assert any(t.startswith("The orchid launch is on the 14th.") for t in texts)
    data = raw_bytes(db)
    assert b"Alvarez-Quinn" not in data and b"184k-Zephyr" not in data


def test_a_credential_stored_before_redaction_is_never_injected(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:  # an older memory, stored verbatim (no redaction then)
        store.store(f"The orchid production database password is {DB_PASSWORD} and the url is "
                    f"postgres://orchid:{DB_PASSWORD}@db.orchid.internal:5432/orchid", tags=["project:orchid"])
    project_dir_path(tmp_path)
    prompt = payload("user_prompt_submit", tmp_path, prompt="How do I connect to the orchid production database?",
                     session_id=SESSION)
    out, err = run_hook(db, "UserPromptSubmit", prompt, LOCALMEM_HOOK_RELEVANCE_FLOOR="0")
    block = json.dumps(out)
    assert out is not None, err
    assert "orchid production database" in block  # injected, redacted
    assert DB_PASSWORD not in block and "[redacted: url-password]" in block


def test_a_stored_credential_is_not_shown_by_the_hooks_v_lines_either(tmp_path):
    """`hook -v` previews each candidate (stderr, and the report's candidates over HTTP): the
    preview is redacted as the block is, at SessionStart and at a prompt."""
    db, token = tmp_path / "m.db", "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    with MemoryStore(db, embedder="hash") as store:  # stored verbatim (no redaction asked)
        store.store(f"The orchid database password is {DB_PASSWORD}, the deploy bot token {token}",
                    tags=["project:orchid"])
    project_dir_path(tmp_path)
    for event, kind, extra in (("UserPromptSubmit", "user_prompt_submit", {"prompt": "orchid database password?"}),
                               ("SessionStart", "session_start", {})):
        out, err = run_hook(db, event, payload(kind, tmp_path, session_id=event, **extra),
                            LOCALMEM_HOOK_RELEVANCE_FLOOR="0", LOCALMEM_HOOK_VERBOSE="1")
        assert out is not None and "The orchid database password is" in err, err
        assert DB_PASSWORD[:8] not in err and token[:12] not in err, err
        assert "[redacted: " in err


def test_a_project_file_turns_capture_off_and_a_bad_one_stops_capture_by_name(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    settings = project_dir_path(tmp_path) / ".localmem.json"
    settings.write_text('{"capture": false}')
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    assert memories(db) == []
    settings.write_text('{"capture": "nope"}')
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    assert memories(db) == [] and ".localmem.json" in err and "capture" in err
    settings.write_text('{"capture": true}')
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    assert memories(db) != []


def test_a_long_turn_is_redacted_whole_before_it_is_cut_into_parts(tmp_path):
    body = "\n".join("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" + f"{i:04d}" for i in range(90))
    text = ("Here is the deploy key for the orchid box, it keeps failing:\n\n-----BEGIN PRIVATE KEY-----\n"
            + body + "\n-----END PRIVATE KEY-----\n\nWhat is wrong with it?")
    assert len(text) > 4000  # stored in parts of at most 2,000 characters
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    append(transcript, user_line("c0ffee00-0004-4e5f-9a7b-3c2d1e0f9a96", text))
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    parts = [m for m in memories(db) if "orchid box" in m["content"] or "What is wrong" in m["content"]]
    assert parts and parts[0]["metadata"]["redacted"] == {"count": 1, "kinds": {"private-key": 1}}
    assert b"MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC" not in raw_bytes(db)
