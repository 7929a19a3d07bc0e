"""The shapes of the fourth held-out corpus's misses (branch redact16's "Written down, not fixed", mended by branch
redact17), each caught in its settings, innocent texts of the same shapes kept, pasted commands stored redacted by
the Stop hook, and hostile 1 MB texts ending.

Each shape was judged alone against main's rules (python benchmarks/safety/redaction_shapes.py) and on the fifth
held-out corpus (benchmarks/common/credential_heldout5.py; python benchmarks/safety/redaction.py --heldout5): not a
test. W9, Redis's ``ACL SETUSER … >…`` and ``AUTH …``, failed its ship rule (a manual's prose), and W10, a Gradle
DSL's ``storePassword "…"`` line, failed it too (the fifth corpus's report half holds its shape and it took none):
neither is here."""

from __future__ import annotations

import pytest

from localmem.privacy import redact

from tests.hook_helpers import payload, run_hook, transcript_copy
from tests.test_hook_capture import append, memories, user_line
from tests.test_privacy_hooks import raw_bytes

PASSWORD = "Tq7#Zx2Lm9pW"
WORDS = "Corvid-Lantern!Quay"  # no digit: main's high-entropy rule after "passwd" or "password" does not take it
COOKIE = "QWERTYUIOPASDFGHJKLZ"  # an Erlang cookie: 20 upper-case letters
IFTTT = "dF3kq9Xz_2LmPw7RtY-8vB"

CAUGHT = [
    # W1: single-dash password flags
    ("command-line-password", f"x11vnc -display :0 -passwd {WORDS} -forever", WORDS),
    ("command-line-password", f"keytool -list -keystore release.jks -storepass {PASSWORD}", PASSWORD),
    ("command-line-password", f"influx -host ts.acme.dev -username admin -password '{WORDS}' -database m", WORDS),
    # W2: positional passwords of named tools
    ("command-line-password", f"rabbitmqctl add_user deploy {PASSWORD}", PASSWORD),
    ("command-line-password", f"rabbitmqctl change_password guest {WORDS}", WORDS),
    ("command-line-password", f"wpa_passphrase ACME-Lab {WORDS} > lab.conf", WORDS),
    ("command-line-password", f"mosquitto_passwd -b /etc/mosquitto/passwd sensor {PASSWORD}", PASSWORD),
    ("command-line-password", f"mc alias set prod https://minio.acme.dev:9000 ACMEACCESSKEY1 {PASSWORD}", PASSWORD),
    ("command-line-password", f"net use Z: \\\\fs01\\share {PASSWORD} /user:ACME\\alice /persistent:yes", PASSWORD),
    ("command-line-password", f"db2 connect to SAMPLE user db2inst1 using {PASSWORD}", PASSWORD),
    # W3: ConvertTo-SecureString -AsPlainText
    ("command-line-password", f'$pw = ConvertTo-SecureString "{PASSWORD}" -AsPlainText -Force', PASSWORD),
    ("command-line-password", f"(ConvertTo-SecureString -String '{PASSWORD}' -AsPlainText -Force)", PASSWORD),
    # W4: PHP and C defines
    ("credential-setting", f"define( 'DB_PASSWORD', '{PASSWORD}' );", PASSWORD),
    ("credential-setting", "define('NONCE_SALT', 'x}Q8:r@v1|Zm^4Lk+pW!7sD0eT#3yB');", "x}Q8:r@v1|Zm^4Lk+pW!7sD0eT#3yB"),
    ("credential-setting", f'#define SECRET_SSID "ACME-IoT"\n#define SECRET_PASS "{PASSWORD}"', PASSWORD),
    # W5: a Wi-Fi QR code
    ("credential-setting", f"WIFI:T:WPA;S:ACME-Home;P:{PASSWORD};;", PASSWORD),
    # W6: netsh wlan's key
    ("credential-setting", f"    Security key           : Present\n    Key Content            : {PASSWORD}", PASSWORD),
    # W7: NickServ
    ("command-line-password", f"/msg NickServ IDENTIFY {PASSWORD}", PASSWORD),
    ("command-line-password", f"/msg NickServ IDENTIFY alice {PASSWORD}", PASSWORD),
    # W8: vsql -w
    ("command-line-password", f"vsql -h vertica.acme.dev -U dbadmin -w {PASSWORD}", PASSWORD),
    # W11: jenkins-cli -auth
    ("command-line-password", "java -jar jenkins-cli.jar -s https://ci.acme.dev/ -auth alice:11aa22bb33cc44dd55ee66ff"
     "77aa88bb99 who-am-i", "11aa22bb33cc44dd55ee66ff77aa88bb99"),
    # W12: codecov -t
    ("command-line-password", "./codecov -t 5f0c2b1e-8a7d-4c3b-9e6f-1a2b3c4d5e6f -f coverage.xml",
     "5f0c2b1e-8a7d-4c3b-9e6f-1a2b3c4d5e6f"),
    # W13: IFTTT's key
    ("webhook-url-token", f"curl -X POST https://maker.ifttt.com/trigger/door_open/with/key/{IFTTT}", IFTTT),
    # W14: KeePass XML
    ("credential-setting", f'<String>\n  <Key>Password</Key>\n  <Value ProtectInMemory="True">{PASSWORD}</Value>\n'
     "</String>", PASSWORD),
    # W15: the Erlang cookie
    ("command-line-password", f"erl -name app@10.0.0.4 -setcookie {COOKIE}", COOKIE),
    ("command-line-password", f"iex --sname a --cookie {COOKIE} -S mix", COOKIE),
]


@pytest.mark.parametrize(("kind", "text", "secret"), CAUGHT, ids=[f"{i}-{c[0]}" for i, c in enumerate(CAUGHT)])
def test_a_corpus4_miss_shape_is_caught(kind, text, secret):
    result = redact(text)
    assert kind in result.findings, result
    assert secret not in result.text and secret[:8] not in result.text, result.text


@pytest.mark.parametrize("text", [
    # W1: what keytool's and jarsigner's manuals write after the flag, a variable, a prompt
    "keytool -storepass [:env | :file] argument", "-storepass option.", "If -keypass isn\\[aq]t provided",
    "x11vnc -passwd passwd-file", "keytool -storepass:env STOREPASS -list", "influx -password $INFLUX_PW",
    "jarsigner -storepass <password> app.apk",
    # W2: prompting forms, options, a variable
    "rabbitmqctl list_users", "rabbitmqctl add_user deploy \"$RABBIT_PW\"", "mosquitto_passwd -c passwd sensor",
    "net use Z: \\\\fs01\\share * /user:ACME\\alice", "net use Z: \\\\fs01\\share /user:ACME\\alice",
    "db2 connect to SAMPLE user db2inst1", "mc alias list",
    # W3: from a prompt or a variable
    'Read-Host -AsSecureString "Password for svc"', 'ConvertTo-SecureString "$env:PW" -AsPlainText',
    # W4: defines that hold no secret, WordPress's placeholder
    "#define SECRET_SSID \"ACME-IoT\"", "#define PASSWORD_MAX_LEN 64", "define('DB_NAME', 'wordpress');",
    "define('AUTH_KEY', 'put your unique phrase here');",
    # W5, W6: an open network, no key shown
    "WIFI:T:nopass;S:ACME-Guest;;", "    Security key           : Absent",
    # W7: other NickServ commands, a placeholder
    "/msg NickServ INFO alice", "/msg NickServ IDENTIFY <password>",
    # W11, W12, W13: a file, a variable, IFTTT's settings
    "java -jar jenkins-cli.jar -auth @/home/alice/.jenkins-token who-am-i", "./codecov -t ${CODECOV_TOKEN}",
    "https://ifttt.com/applets/12345678-turn-on-the-porch-light",
    # W14: another entry field
    "<String>\n  <Key>Title</Key>\n  <Value>GitHub</Value>\n</String>",
    # W15: the cookie from a file
    'erl -name app@10.0.0.4 -setcookie "$(cat /run/secrets/erlang_cookie)"', "erl -setcookie -name app@host",
])
def test_an_innocent_text_of_the_same_shape_is_kept(text):
    assert redact(text).text == text


def test_pasted_commands_are_stored_redacted_by_the_stop_hook(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    first_text = f"my wp-config.php has define( 'DB_PASSWORD', '{PASSWORD}' ); and WordPress still can't connect"
    second_text = f"the QR on the fridge decodes to WIFI:S:ACME;T:WPA;P:{PASSWORD};; but the phone won't join"
    append(transcript, user_line("c0ffee00-0017-4e5f-9a7b-3c2d1e0f9a51", first_text),
           user_line("c0ffee00-0017-4e5f-9a7b-3c2d1e0f9a52", second_text))
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    stored = {m["metadata"]["message_uuid"]: m for m in memories(db)}
    first, second = stored["c0ffee00-0017-4e5f-9a7b-3c2d1e0f9a51"], stored["c0ffee00-0017-4e5f-9a7b-3c2d1e0f9a52"]
    assert "'DB_PASSWORD', '[redacted: credential-setting]'" in first["content"], first["content"]
    assert first["metadata"]["redacted"] == {"count": 1, "kinds": {"credential-setting": 1}}
    assert "P:[redacted: credential-setting];;" in second["content"], second["content"]
    assert second["metadata"]["redacted"] == {"count": 1, "kinds": {"credential-setting": 1}}
    data = raw_bytes(db)  # row, FTS shadow tables, vectors, dedup keys: none was made from the secret
    assert PASSWORD.encode() not in data and PASSWORD[:8].encode() not in data


@pytest.mark.parametrize("text", [
    "-passwd " * 125_000, "-storepass a" * 90_000, "rabbitmqctl " * 90_000, "rabbitmqctl " + "x " * 500_000,
    "wpa_passphrase " * 70_000, "mosquitto_passwd -b " * 50_000, "mc alias set " * 80_000,
    "net use \\\\a " * 90_000, "db2 connect to a user " * 45_000, "ConvertTo-SecureString 'a' " * 40_000,
    "define('A_PASS', '" * 55_000, "#define A_KEY \"" * 65_000, "WIFI:" + "a;" * 500_000, "WIFI:P:" * 150_000,
    "Key Content : " + "a " * 500_000, "/msg NickServ IDENTIFY " * 45_000, "vsql " * 200_000, "-auth a:" * 125_000,
    "codecov " * 125_000, "maker.ifttt.com/" + "a/" * 500_000, "<Key>Password</Key>" * 55_000,
    "<Key>Password</Key><Value " + "a" * 1_000_000, "-setcookie " * 90_000, "iex " * 250_000,
])
def test_hostile_texts_for_the_corpus4_miss_shapes_end(text):
    """Each holds a new pattern's start many times over, or one start before a 1 MB run (a quadratic pattern would
    take hours on it); python benchmarks/speed/redaction_cost.py --adversarial times every pattern on such strings.
    What is left is the text with each finding replaced by one placeholder (a hostile "define('A_PASS', '" run has
    its quoted "define(" pieces taken for values)."""
    result = redact(text)
    assert len(result.text) <= len(text) + len("[redacted: command-line-password]") * sum(result.findings.values())
