"""General shapes written from the second held-out corpus's develop half (issue 40, branch redact15): each caught
in its settings, innocent texts of the same shapes kept, the develop half caught but for its known leftovers, a
pasted config stored redacted by the Stop hook, and hostile 1 MB texts ending.

The held-out judgement of these shapes is not a test: benchmarks/common/credential_heldout2.py's report half and
credential_heldout3.py (python benchmarks/safety/redaction.py --heldout2 / --heldout3)."""

from __future__ import annotations

import pytest

from localmem.privacy import redact

from benchmarks.common.credential_heldout2 import heldout2_corpus, split
from tests.hook_helpers import payload, run_hook, transcript_copy
from tests.test_hook_capture import append, memories, user_line
from tests.test_privacy_hooks import raw_bytes

OPENVPN_LINE = "9302c85fc5707558569a93dd78f93f8c"
OPENVPN = ("-----BEGIN OpenVPN Static key V1-----\nd5a65c9bbbfae718a51728c37af29c34\n" + OPENVPN_LINE
           + "\n6f5fe6fe3a9f8c8cd315e17817997759\n-----END OpenVPN Static key V1-----")
SEED = "amount angle always aerobic arm age acid aerobic afford air already above"

CAUGHT = [
    ("private-key", OPENVPN, OPENVPN_LINE),
    ("private-key", "<tls-auth>\n" + OPENVPN + "\n</tls-auth>\nkey-direction 1", OPENVPN_LINE),
    ("credential-setting", "DB_PASS=Zq8vLm2x#Qw", "Zq8vLm2x#Qw"),
    ("credential-setting", "SMTP_HOST=smtp.acme.dev\nSMTP_PASS=V-KSoJyMao%eRu", "V-KSoJyMao%eRu"),
    ("credential-setting", "docker run -e RABBITMQ_DEFAULT_PASS=H2H9YQzxs_p9xVJs rabbitmq:3", "H2H9YQzxs_p9xVJs"),
    ("credential-setting", "REDIS_AUTH=yS7Z8KcPRgFlOk0L1", "yS7Z8KcPRgFlOk0L1"),
    ("credential-setting", "ansible_become_pass: Tr0ub4dor&3xq", "Tr0ub4dor&3xq"),
    ("credential-setting", '# terraform.tfvars\ndb_admin_pass = "dYi8WNcApo_TRET.EGU"', "dYi8WNcApo_TRET.EGU"),
    ("secret-assignment", '{"password": "xTvIXJL.Z3Haz"}', "xTvIXJL.Z3Haz"),
    ("command-line-password", 'ldapsearch -x -H ldap://ldap.acme.dev -D "cn=admin,dc=acme,dc=dev" -w ISf.ua2*mErB '
                              '-b "dc=acme,dc=dev"', "ISf.ua2*mErB"),
    ("command-line-password", "smbclient //fs.acme.dev/share -U alice%8ZR_T41pNTlh^", "8ZR_T41pNTlh^"),
    ("keyed-value", "Unseal Key 1: qGgUD7jE77MSqEX4miAaQq6Ws+l7spA3oKfZPoX60+oj", "qGgUD7jE77MSqEX4miAaQq6Ws"),
    ("keyed-value", "APP_ENV=production\nAPP_KEY=base64:OIhp2qLAeoF1uN2Xr8KG7HIvk1BVqw5eI9EBG5t6t8M=",
     "OIhp2qLAeoF1uN2Xr8KG7HIvk1BVqw5eI9EBG5t6t8M"),
    ("secret-like-value", "ngrok config add-authtoken 2fmiV81CoZFixrVYZcKvmfRQjT4_roU3rSjDXxC8g5Ncz4Vn6",
     "2fmiV81CoZFixrVYZcKvmfRQjT4_roU3rSjDXxC8g5Ncz4Vn6"),
    ("client-token", 'co = cohere.Client("cC9Pj2RO2JWZ0fpfTXKOnC98KQzAC6HRTuqTznqO")',
     "cC9Pj2RO2JWZ0fpfTXKOnC98KQzAC6HRTuqTznqO"),
    ("client-token", "session = APISession('u+cK1JRf5EhsR1BQx-WN')", "u+cK1JRf5EhsR1BQx-WN"),
    ("sk-api-key", "my deepseek key sk-19f686a2b4411ec9fa174c8394ba9171 stopped working",
     "19f686a2b4411ec9fa174c8394ba9171"),
    ("seed-phrase", f'MNEMONIC="{SEED}"', SEED),
    ("seed-phrase", f"my seed phrase is: {SEED}", SEED),
    ("seed-phrase", f'const wallet = ethers.Wallet.fromPhrase("{SEED}");', SEED),
]


@pytest.mark.parametrize(("kind", "text", "secret"), CAUGHT, ids=[f"{i}-{c[0]}" for i, c in enumerate(CAUGHT)])
def test_a_develop_half_shape_is_caught(kind, text, secret):
    result = redact(text)
    assert kind in result.findings, result
    assert secret not in result.text and secret[:12] not in result.text, result.text


@pytest.mark.parametrize("text", [
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBGXabc\n-----END PGP PUBLIC KEY BLOCK-----",
    "-----BEGIN SSH2 PUBLIC KEY ----\nAAAAB3NzaC1yc2EAAAADAQABAAABAQ\n---- END SSH2 PUBLIC KEY ----",
    "basic_auth: true", "first_pass: 0.5", "two-pass = enabled", "x_oauth: github", "use_auth: yes",
    "ansible_become_pass: \"{{ vault_become_pass }}\"", "DB_PASS=${DB_PASS}", "SMTP_PASS=<your-password>",
    "ldapsearch -x -W -D cn=admin,dc=acme,dc=dev", "ldapsearch -x -w $LDAP_PW -b dc=acme,dc=dev",
    "smbclient //fs/share -U alice", "smbclient //fs/share -U alice%$SMB_PW", "sort -U 50% done",
    "Key 1: the first step", "APP_KEY=", "APP_KEY=base64:", "Client(\"localhost:8080\")", "boto3.Session('default')",
    "client = Client(\"my-service-name-v2\")", "pip install scikit-learn sk-learn", "sk-xxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "mnemonic devices help students remember the order of the planets in school", "seed: 42",
    "the phrase is: all that glitters is not gold", 'password = "request.form"', '"host": "smtp.gmail.com"',
    # the manual-page lines the reverted directive-line shape touched: kept
    "re-auth again.", "my-secret --data-file=-", "keystore_password -keypass", "chgpasswd [options]", "vipw [options]",
])
def test_an_innocent_text_of_the_same_shape_is_kept(text):
    assert redact(text).text == text


def test_the_develop_half_of_the_second_held_out_corpus_is_caught():
    """The half the shapes were written from (its other half and the third corpus are the held-out figures)."""
    develop, _ = split()
    missed = [name for name, secret, text in heldout2_corpus() if name in develop
              and secret[:12 if len(secret) >= 24 else 8] in redact(text).text]
    # Left: tccli's "secretKey …", Config("sdk-…"), a WIF key, a Gmail app password in four groups, a Laravel key on
    # a line alone, "vault operator unseal …", a pagerduty key with one digit, an unquoted dotted password, and the
    # directive lines (redis.conf's requirepass, nslcd's bindpw) whose shape was not shipped.
    assert set(missed) <= {"tencent-cloud-secret-key", "launchdarkly-sdk-key", "bitcoin-wif-key", "gmail-app-password",
                           "laravel-app-key", "vault-unseal-key", "pagerduty-api-key", "env-unusual-names",
                           "ldap-bind-password", "redis-requirepass"}, missed
    assert len(missed) <= 68


DB_PASS = "Hv7#kQ2mZp9Lw"


def test_a_pasted_env_file_and_seed_phrase_are_stored_redacted_by_the_stop_hook(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    env = f"the app cannot reach postgres, my .env is:\n\nDB_HOST=db.internal\nDB_PASS={DB_PASS}\n\nwhat is wrong?"
    seed = f"I restored my wallet with the seed phrase: {SEED}, but the balance is zero"
    append(transcript, user_line("c0ffee00-0002-4e5f-9a7b-3c2d1e0f9a51", env),
           user_line("c0ffee00-0002-4e5f-9a7b-3c2d1e0f9a52", seed))
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    stored = {m["metadata"]["message_uuid"]: m for m in memories(db)}
    first, second = stored["c0ffee00-0002-4e5f-9a7b-3c2d1e0f9a51"], stored["c0ffee00-0002-4e5f-9a7b-3c2d1e0f9a52"]
    assert "DB_PASS=[redacted: credential-setting]" in first["content"], first["content"]
    assert first["metadata"]["redacted"] == {"count": 1, "kinds": {"credential-setting": 1}}
    assert "[redacted: seed-phrase]" in second["content"], second["content"]
    data = raw_bytes(db)  # row, FTS shadow tables, vectors, dedup keys: none was made from the secret
    for secret in (DB_PASS, SEED, " ".join(SEED.split()[3:7])):
        assert secret.encode() not in data


@pytest.mark.parametrize("text", [
    "seed " * 200_000, "mnemonic: " + "abc " * 250_000, "sk-" * 330_000, "sk-" + "a1" * 500_000,
    'Client("' * 125_000, "Client(\"" + "a1B2" * 250_000, "a_pass=" * 140_000, "x_" * 400_000 + "pass=1",
    "-U a%" * 200_000, "ldapsearch " + "-x " * 330_000, "Key 1: " * 140_000, "KEY=base64:" * 90_000,
    "-----BEGIN " + "Static key " * 90_000, "-----BEGIN OpenVPN Static key V1-----" * 27_000,
])
def test_hostile_texts_for_the_develop_half_shapes_end(text):
    """Each holds a new pattern's start many times over, or one start before a 1 MB run; python benchmarks/speed/
    redaction_cost.py --adversarial times every pattern on such strings (linear: about 8× from 128 KB to 1 MB)."""
    result = redact(text)
    assert len(result.text) <= len(text)
