"""Capture's rules on transcripts in Claude Code's real shape, through ``localmem hook Stop``
as a subprocess: what is kept by its shape, what is skipped and why, retractions, ``-v``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from localmem import ConfigError, MemoryStore
from localmem.hooks.noise_rules import load_rules
from tests.claude_code_transcript import Transcript, image, thinking
from tests.hook_helpers import SESSION, payload, project_dir_path, run_hook

TRACEBACK = "Traceback (most recent call last):\n" + "".join(
    f'  File "/home/dana/src/orchid/orchid/pipeline/stage_{i}.py", line {10 + i}, in run_stage_{i}\n'
    f"    result = stage_{i}.execute(context, retries=3, timeout=30)\n" for i in range(24)) + \
    "orchid.pipeline.errors.StageTimeout: stage 23 did not finish within 30 seconds"
CODE_BODY = "".join(f"def handler_{i}(event, context):\n    payload = json.loads(event['body'])\n"
                    f"    return {{'statusCode': 200, 'id': payload['id'] + {i}}}\n\n" for i in range(12))
CODE = "```python\n" + CODE_BODY + "```"
LOG = "\n".join(f"2026-11-28 10:{i:02d}:13,512 INFO [worker-{i % 3}] orchid.jobs: job {4000 + i} finished in "
                f"{i * 13} ms" for i in range(20))
DIFF = ("diff --git a/orchid/config.py b/orchid/config.py\nindex 3b18e51..a9c2f0d 100644\n--- a/orchid/config.py\n"
        "+++ b/orchid/config.py\n@@ -1,5 +1,5 @@\n import os\n-TIMEOUT = 30\n+TIMEOUT = 60\n RETRIES = 3\n"
        " QUEUE = 'orchid-jobs'\n")
TOOL_JSON = json.dumps({"status": "success", "results": [{"id": i, "name": f"job-{i}", "state": "done"}
                                                         for i in range(8)]}, indent=2)


def transcript(tmp_path: Path) -> Transcript:
    return Transcript(tmp_path / f"{SESSION}.jsonl", SESSION, str(project_dir_path(tmp_path) / "src"))


def stop(tmp_path: Path, t: Transcript, **env: str) -> str:
    out, err = run_hook(tmp_path / "m.db", "Stop", payload("stop", tmp_path, t.path), **env)
    assert out is None
    return err


def stored(tmp_path: Path) -> dict[str, dict]:
    with MemoryStore(tmp_path / "m.db", embedder="hash") as store:
        return {m["metadata"]["message_uuid"]: m
                for m in store.list_memories(limit=200, sort="time_asc")["memories"]}


def test_acknowledgements_are_skipped_in_any_casing_and_short_decisions_are_kept(tmp_path):
    t = transcript(tmp_path)
    courtesy = [t.user(text) for text in ("ok", "great, thanks", "yes go ahead", "thanks, that's all for today",
                                          "Sounds good!", "OKAY!!", "Perfect, thank you so much.", "Thanks, Dana!")]
    courtesy += t.assistant("Glad to help!")
    kept = [t.user("use pytest, never unittest"), t.user("No, use Postgres."),
            t.user("We deploy on Tuesdays."), t.user("ok, and the staging db is orchid-staging-7")]
    kept += t.assistant("Thanks! I set the retry limit to 5, as you asked.")
    stop(tmp_path, t)
    memories = stored(tmp_path)
    assert sorted(memories) == sorted(kept)
    assert not set(courtesy) & set(memories)


def test_a_long_traceback_is_not_stored_and_never_in_two_parts(tmp_path):
    assert len(TRACEBACK) > 2500
    t = transcript(tmp_path)
    alone = t.user(TRACEBACK)
    led = t.user("Here's the traceback from the nightly build:\n" + TRACEBACK)  # a lead-in goes with its dump
    err = stop(tmp_path, t, LOCALMEM_HOOK_VERBOSE="1")
    memories = stored(tmp_path)
    assert alone not in memories and led not in memories and memories == {}
    assert "code_or_log 2" in err


def test_prose_before_a_code_block_does_not_save_the_dump_but_a_real_statement_is_kept(tmp_path):
    t = transcript(tmp_path)
    lead_in = t.user("Here is the new version of the webhook handler module:\n" + CODE)  # 54 characters of prose
    statement = ("The webhook handlers must stay idempotent because Stripe retries deliveries. "
                 "I rewrote them like this:\n" + CODE + "\nKeep the 200 reply even when the id was seen before.")
    mixed = t.user(statement)
    stop(tmp_path, t)
    memories = stored(tmp_path)
    assert lead_in not in memories
    kept = memories[mixed]
    assert "def handler_" not in kept["content"] and "```" not in kept["content"]
    assert kept["content"].startswith("The webhook handlers must stay idempotent")
    assert kept["content"].endswith("Keep the 200 reply even when the id was seen before.")
    assert "code/log-shaped" in kept["metadata"]["cut"]


@pytest.mark.parametrize("dump", [LOG, DIFF, TOOL_JSON, CODE_BODY],
                         ids=["log", "diff", "json", "bare-code"])
def test_logs_diffs_tool_output_and_bare_code_are_skipped(tmp_path, dump):
    t = transcript(tmp_path)
    t.user(dump)
    middle = t.user("The queue is orchid-jobs and the timeout is 60 seconds now.\n\n" + dump +
                    "\n\nThat change went out with release 4.2 yesterday.")
    stop(tmp_path, t)
    memories = stored(tmp_path)
    assert list(memories) == [middle]
    content = memories[middle]["content"]
    assert content == ("The queue is orchid-jobs and the timeout is 60 seconds now.\n\n"
                       "That change went out with release 4.2 yesterday.")


def test_only_the_conversation_of_a_real_shaped_transcript_is_kept(tmp_path):
    t = transcript(tmp_path)
    t.summary("Orchid: moving the job queue")
    t.snapshot()
    asked = t.user("Move the orchid job queue to Redis streams; Kafka is too heavy for us.")
    t.system("Running PreToolUse hooks")
    said = t.assistant(thinking("The user wants Redis streams. Read the queue module."),
                       "I'll move the queue to Redis streams, starting with the producer.")
    t.tool_round("Bash", {"command": "pytest -q tests/test_queue.py"}, "F....\n" + TRACEBACK)
    t.tool_round("Read", {"file_path": "/home/dana/src/orchid/queue.py"}, CODE)
    shown = t.user([{"type": "text", "text": "This screenshot shows the consumer lag we must stay under: 2 seconds."},
                    image()])
    t.user("Summarise the queue module for me.", isSidechain=True)  # a sub-agent's thread
    t.user("<command-name>/cost</command-name>")
    t.user("Caveat: The messages below were generated by the user while running local commands.", isMeta=True)
    done = t.assistant("Done: the producer and consumer now use Redis streams with a consumer group per worker.")
    stop(tmp_path, t)
    memories = stored(tmp_path)
    assert set(memories) == {asked, said[1], shown, done[0]}
    assert memories[shown]["content"] == "This screenshot shows the consumer lag we must stay under: 2 seconds."
    text = "\n".join(m["content"] for m in memories.values())
    assert "Traceback" not in text and "def handler_" not in text and "Read the queue module" not in text


def test_a_retraction_supersedes_the_plan_across_stop_runs_and_the_next_session_sees_the_correction(tmp_path):
    t = transcript(tmp_path)
    plan = t.user("Let's store the orders service data in MySQL 8.")
    stop(tmp_path, t)
    answer = t.assistant("OK, I'll set the orders service up on MySQL 8 with a migration for the orders table.")
    stop(tmp_path, t)
    unrelated = t.user("The orders service listens on port 8081.")
    stop(tmp_path, t)
    correction = t.user("Actually, let's not use MySQL for orders; use Postgres 16 instead.")
    err = stop(tmp_path, t, LOCALMEM_HOOK_VERBOSE="1")
    assert "2 earlier memories retracted" in err
    memories = stored(tmp_path)
    with MemoryStore(tmp_path / "m.db", embedder="hash") as store:
        shown = [r["memory"]["id"] for r in store.recall("orders service MySQL database", limit=10)["results"]]
        assert memories[correction]["id"] in shown and memories[unrelated]["id"] in shown
        assert memories[plan]["id"] not in shown and memories[answer[0]]["id"] not in shown
        assert store.get(memories[plan]["id"], with_edges=True)["state"]["superseded_by"] == memories[correction]["id"]
        history = [r["memory"]["id"] for r in store.recall("orders service MySQL database", limit=10,
                                                           state_mode="history")["results"]]
        assert memories[plan]["id"] in history  # nothing is lost: history recall has the retracted plan
    start, _ = run_hook(tmp_path / "m.db", "SessionStart", payload("session_start", tmp_path, session_id="session-b"))
    block = start["hookSpecificOutput"]["additionalContext"]
    assert "use Postgres 16 instead" in block and "MySQL 8" not in block


def test_a_retraction_in_one_run_with_its_plan_and_an_assistant_correction(tmp_path):
    t = transcript(tmp_path)
    plan = t.user("Schedule the cleanup job at 02:00 UTC every night.")
    ack = t.assistant("Scheduled the cleanup job for 02:00 UTC.")
    scratch = t.user("Scratch that, run it at 04:00 UTC, after the backups.")
    wrong = t.assistant("The backups finish at 03:10 UTC.")
    fixed = t.assistant("Correction: the backups finish at 03:40 UTC, so 04:00 still leaves a margin.")
    stop(tmp_path, t)
    memories = stored(tmp_path)
    with MemoryStore(tmp_path / "m.db", embedder="hash") as store:
        def superseded_by(uuid):
            return store.get(memories[uuid]["id"], with_edges=True)["state"].get("superseded_by")
        assert superseded_by(plan) == superseded_by(ack[0]) == memories[scratch]["id"]
        assert superseded_by(wrong[0]) == memories[fixed[0]]["id"]
        assert superseded_by(scratch) is None and superseded_by(fixed[0]) is None


def test_not_a_retraction_links_nothing(tmp_path):
    t = transcript(tmp_path)
    t.user("We use Postgres for orders.")
    t.user("We don't use MySQL anywhere.")
    t.user("Actually I like the new dashboard.")
    err = stop(tmp_path, t, LOCALMEM_HOOK_VERBOSE="1")
    assert "0 earlier memories retracted" in err and len(stored(tmp_path)) == 3


def test_verbose_stop_says_stored_skipped_by_rule_and_already_captured(tmp_path):
    t = transcript(tmp_path)
    t.user("The release train leaves every second Thursday.")
    t.user("thanks!")
    t.user(LOG)
    t.tool_round("Bash", {"command": "ls"}, "a b c")
    first = stop(tmp_path, t, LOCALMEM_HOOK_VERBOSE="1")
    assert "capture: 1 message(s) stored" in first and "0 already captured" in first
    assert "skipped by rule: code_or_log 1, courtesy 1" in first
    assert "tool_result 1" in first and "tool_use 1" in first
    with MemoryStore(tmp_path / "m.db", embedder="hash") as store:
        store.conn.execute("DELETE FROM hook_transcripts")
    second = stop(tmp_path, t, LOCALMEM_HOOK_VERBOSE="1")
    assert "capture: 0 message(s) stored" in second and "1 already captured" in second


def test_bare_questions_are_skipped_by_default_and_kept_when_the_rules_say_so(tmp_path):
    t = transcript(tmp_path)
    bare = t.user("how do I run the tests?")
    personal = t.user("What should I pack for my trip to Lisbon in May?")
    stated = t.user("We use tox. How do I run the tests?")
    assistant_question = t.assistant("Do you want me to run them now?")
    err = stop(tmp_path, t, LOCALMEM_HOOK_VERBOSE="1")
    assert "bare_question 1" in err
    assert set(stored(tmp_path)) == {personal, stated, assistant_question[0]}
    assert bare not in stored(tmp_path)
    elsewhere = tmp_path / "kept"
    elsewhere.mkdir()
    rules = elsewhere / "rules.json"
    rules.write_text(json.dumps({"skip_bare_questions": False}))
    t2 = Transcript(elsewhere / "t.jsonl", SESSION, t.cwd)
    kept = t2.user("how do I run the tests?")
    run_hook(elsewhere / "m.db", "Stop", payload("stop", tmp_path, t2.path), LOCALMEM_HOOK_RULES_PATH=str(rules))
    with MemoryStore(elsewhere / "m.db", embedder="hash") as store:
        assert [m["metadata"]["message_uuid"] for m in store.list_memories()["memories"]] == [kept]


@pytest.mark.parametrize("content, named", [
    ({"dump_share_percent": 150}, "dump_share_percent"), ({"skip_bare_questions": "yes"}, "skip_bare_questions"),
    ({"retraction_patterns": ["(x"]}, "retraction_patterns"), ({"courtesy_words": "ok"}, "courtesy_words"),
])
def test_bad_shape_rules_are_refused_by_name(tmp_path, content, named):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps(content))
    with pytest.raises(ConfigError, match=named):
        load_rules(str(rules))


def test_the_rules_shown_in_the_docs_are_the_built_in_rules():
    from localmem.hooks.noise_rules import DEFAULT_RULES

    text = (Path(__file__).resolve().parent.parent / "docs" / "hooks.md").read_text("utf-8")
    block = text.split("### The noise rules", 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(block) == json.loads(json.dumps(DEFAULT_RULES))


def test_a_paragraph_quoted_in_a_fence_is_prose_and_kept(tmp_path):
    t = transcript(tmp_path)
    quoted = t.user("```\nThe auditors arrive on 3 March and will want the access logs for the billing service.\n"
                    "Priya is the contact person for everything about the audit.\n```")
    config = t.user("```yaml\nretries: 3\ntimeout: 60\nqueue: orchid-jobs\nworkers: 8\nregion: eu-west-1\n```")
    stop(tmp_path, t)
    assert set(stored(tmp_path)) == {quoted}
    assert config not in stored(tmp_path)


def test_max_chars_counts_what_is_left_after_the_dump_is_cut(tmp_path):
    t = transcript(tmp_path)
    prose = "The orchid billing export must finish before the 06:00 UTC invoice run, every day."
    long_log = "\n".join(f"2026-11-28 10:{i % 60:02d}:13,512 INFO [worker-{i % 3}] orchid.jobs: job {4000 + i} done"
                         for i in range(260))
    assert len(long_log) > 12000
    kept = t.user(prose + "\n\n" + long_log)
    too_long = t.user(" ".join([prose] * 160))  # over 12,000 characters of prose: a paste, skipped
    err = stop(tmp_path, t, LOCALMEM_HOOK_VERBOSE="1")
    memories = stored(tmp_path)
    assert set(memories) == {kept} and memories[kept]["content"] == prose
    assert too_long not in memories and "too_long 1" in err


def test_a_rules_file_copied_from_the_old_defaults_still_captures_and_says_what_no_longer_applies(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"max_chars": 12000, "code_only_min_chars": 600, "prose_min_chars": 40}))
    t = transcript(tmp_path)
    kept = t.user("The invoice run starts at 06:00 UTC.")
    err = stop(tmp_path, t, LOCALMEM_HOOK_RULES_PATH=str(rules), LOCALMEM_HOOK_VERBOSE="1")
    assert set(stored(tmp_path)) == {kept}
    assert "'code_only_min_chars' is no longer used" in err
    from localmem.hooks.noise_rules import effective_rules
    shown = effective_rules(str(rules))
    assert "code_only_min_chars" not in shown["rules"] and "code_only_min_chars" in shown["notes"][0]


def test_a_working_session_leaves_only_what_matters_for_the_next_one(tmp_path):
    """The issue's session, in Claude Code's shape: acknowledgements, a long traceback, a code dump
    after one line of prose, a bare question, a retracted plan and tool rounds. The next session
    starts with the decisions, preferences and facts, the correction in place of the plan."""
    t = transcript(tmp_path)
    t.summary("Orders service: database and tests")
    keep = {t.user("use pytest, never unittest"),
            t.user("The orders service reads its config from config/orders.toml.")}
    t.assistant(thinking("Set up the test runner."), "Noted: pytest only.")  # the text block is kept too
    keep.add(t.uuids[-1])
    noise = [t.user("ok"), t.user("how do I run the tests?")]
    t.tool_round("Bash", {"command": "pytest -q"}, TRACEBACK)
    noise.append(t.user("It fails like this:\n" + TRACEBACK))
    noise.append(t.assistant("Here is the new version of the webhook handlers file:\n" + CODE)[0])
    plan = t.user("Let's use MySQL 8 for the orders database.")
    noise.append(t.user("yes go ahead"))
    correction = t.user("No wait, use Postgres 16 instead of MySQL; the reporting team already runs it.")
    keep.add(correction)
    noise += [t.user("great, thanks"), t.user("thanks, that's all for today")]
    stop(tmp_path, t)
    memories = stored(tmp_path)
    assert set(memories) == keep | {plan}
    assert not set(noise) & set(memories)
    start, _ = run_hook(tmp_path / "m.db", "SessionStart", payload("session_start", tmp_path, session_id="next"))
    block = start["hookSpecificOutput"]["additionalContext"]
    for kept in ("use pytest, never unittest", "config/orders.toml", "use Postgres 16 instead of MySQL"):
        assert kept in block
    for gone in ("MySQL 8 for the orders", "Traceback", "def handler_", "how do I run", "thanks", "go ahead"):
        assert gone not in block


@pytest.mark.parametrize("event, kind", [("PreCompact", "pre_compact"), ("SessionEnd", "session_end")])
def test_pre_compact_and_session_end_say_what_capture_did_under_v(tmp_path, event, kind):
    t = transcript(tmp_path)
    t.user("Release notes go to #orchid-releases.")
    t.user("sounds good!")
    _, err = run_hook(tmp_path / "m.db", event, payload(kind, tmp_path, t.path), LOCALMEM_HOOK_VERBOSE="1")
    assert f"localmem hook: {event}: nothing to say" in err
    assert "capture: 1 message(s) stored" in err and "skipped by rule: courtesy 1" in err
