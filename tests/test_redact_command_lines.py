"""Passwords on command lines and in short notes (issue 40): mysql ``-p``/``--password``, ``sshpass -p``,
``curl -u user:password``, ``htpasswd -b``, and the ``pw`` spellings are redacted; ports, paths, prompts for a
password, variables and prose of the same shape are kept."""

from __future__ import annotations

import pytest

from benchmarks.common.credential_corpus import COMMAND_LINES, LOOKALIKES, command_corpus
from localmem.privacy import redact
from tests.hook_helpers import payload, run_hook, transcript_copy
from tests.test_hook_capture import append, memories, user_line
from tests.test_privacy_hooks import raw_bytes


def _samples(kind: str) -> list[tuple[str, str]]:
    return [(secret, text) for found, secret, text in command_corpus() if found == kind]


@pytest.mark.parametrize("kind", sorted({kind for kind, _ in COMMAND_LINES}))
def test_every_command_line_shape_loses_its_password(kind):
    for secret, text in _samples(kind):
        out = redact(text).text
        assert secret not in out, (text, out)
        assert not any(secret[i:i + 8] in out for i in range(len(secret) - 7)), (text, out)


@pytest.mark.parametrize("text", LOOKALIKES)
def test_a_look_alike_without_a_password_is_kept_as_written(text):
    assert redact(text).findings == {}


@pytest.mark.parametrize("text, kept", [
    ("mysql -uroot -pS3cret!x9 shop", "mysql -uroot -p[redacted: command-line-password] shop"),
    ("mysql -u root --password='Tr0ub4dor&3' shop",
     "mysql -u root --password='[redacted: command-line-password]' shop"),
    ("sshpass -p 'hunter2hunter2' ssh deploy@host", "sshpass -p '[redacted: command-line-password]' ssh deploy@host"),
    ("curl -u alice:Zx9pQ2mW7k https://x.example", "curl -u alice:[redacted: command-line-password] https://x.example"),
    ("htpasswd -b .htpasswd alice Pa55word9", "htpasswd -b .htpasswd alice [redacted: command-line-password]"),
])
def test_only_the_password_goes_and_the_command_stays_readable(text, kept):
    assert redact(text).text == kept


@pytest.mark.parametrize("text", [
    "mysql -u root -p***** shop", "mysql -u root -p<password> shop", "curl -u alice:$PASS https://x.example",
    "sshpass -p \"$(cat ~/.pw)\" ssh deploy@host", "mysql --password=changeme shop",
])
def test_a_placeholder_or_a_variable_in_the_password_place_is_kept(text):
    assert redact(text).findings == {}


def test_a_command_line_password_pasted_in_a_question_is_stored_redacted_by_the_stop_hook(tmp_path):
    password = "Qm7!vR2x-Lp9Tz"
    question = (f"I ran mysql -u deploy -p{password} -h db.internal shop and it says access denied for user "
                f"deploy. What is wrong with the grant?")
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    append(transcript, user_line("c0ffee00-0001-4e5f-9a7b-3c2d1e0f9a98", question))
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    stored = [m for m in memories(db) if "access denied" in m["content"]]
    assert len(stored) == 1, err
    assert "-p[redacted: command-line-password] -h db.internal" in stored[0]["content"]
    assert stored[0]["metadata"]["redacted"] == {"count": 1, "kinds": {"command-line-password": 1}}
    assert password.encode() not in raw_bytes(db)


@pytest.mark.parametrize("text", [
    "mysql " * 170_000, "mysql -u root " * 70_000 + "-p", ("mysql " + "a" * 300 + " ") * 3_000,
    "curl -u " * 125_000, "curl " + "-u a " * 200_000, ("curl " + "x" * 255 + " ") * 3_800 + "-u a:",
    "sshpass -x " * 90_000, "--pass " * 140_000, "htpasswd -bn " * 75_000, "htpasswd -b a " * 70_000 + "b",
    "docker login " * 80_000, "docker login -u a " * 60_000 + "-p", "mongo -p " * 110_000, "mongosh -u a " * 75_000,
    "redis-cli -x " * 80_000, "redis-cli " + "-h a " * 200_000, "mongo -p abc " * 80_000,
])
def test_hostile_command_lines_finish_and_are_kept(text):
    """1 MB of a command rule's pieces repeated: each start looks at most 12 arguments ahead, so the work is
    linear (a quadratic rule would take minutes here)."""
    assert redact(text).text == text


@pytest.mark.parametrize("text", [
    "gcloud sql users create alice --instance=main [--password=PASSWORD] [--host=HOST]",
    "smbclient --pass=FILE //server/share", "gpg --passwd user-id",
])
def test_a_manual_s_stand_in_for_the_password_is_kept(text):
    """Usage lines of the manual pages (benchmarks/safety/redaction_heldout.py): a stand-in in capitals, in
    brackets, or a flag that is not a password's (gpg's --passwd takes a user id)."""
    assert redact(text).findings == {}


# docker login, the mongo shells and redis-cli (issue 40, redact11): their password flags, space-separated.
@pytest.mark.parametrize("text, kept", [
    ("docker login -u deploy -p Zq8!vT2mLx registry.example.com", "docker login -u deploy -p "),
    ("docker login registry.gitlab.com -u ci -p 'Zq8!vT2mLx'", "docker login registry.gitlab.com -u ci -p "),
    ("docker login --username ci --password Zq8!vT2mLx ghcr.io", "docker login --username ci --password "),
    ("mongo -u admin -p Zq8!vT2mLx --authenticationDatabase admin", "mongo -u admin -p "),
    ("mongosh mongodb://db:27017/app -u app -p Zq8!vT2mLx", "mongosh mongodb://db:27017/app -u app -p "),
    ("redis-cli -h cache.internal -a Zq8!vT2mLx ping", "redis-cli -h cache.internal -a "),
    ("redis-cli -a Zq8!vT2mLx --no-auth-warning info", "redis-cli -a "),
])
def test_docker_mongo_and_redis_passwords_go(text, kept):
    out = redact(text).text
    assert "Zq8!vT2mLx" not in out
    assert out.startswith(kept) and out[len(kept):].lstrip("'").startswith("[redacted: command-line-password]")


@pytest.mark.parametrize("text", [
    "docker run -p 8080:80 nginx", "docker login -p", "docker login -u ci --password-stdin ghcr.io",
    "docker compose -p myproject up", "docker login -u ci -p $CI_JOB_TOKEN registry.gitlab.com",
    "mongo -u admin -p --authenticationDatabase admin", "mongosh -p", "mongod --port 27017 --dbpath /data",
    "redis-cli -a $REDIS_PASSWORD ping", "redis-cli --askpass", "redis-cli -h host -p 6380 ping",
    "redis-cli -a <password>", "the mongo -p flag prompts when given no value",
])
def test_docker_mongo_and_redis_look_alikes_are_kept(text):
    assert redact(text).text == text
