"""The shapes of issue 40's written-down misses (branch redact16's work list), each caught in its settings, innocent
texts of the same shapes kept, a pasted command and webhook stored redacted by the Stop hook, and hostile 1 MB texts
ending.

Each shape was judged alone against main's rules (python benchmarks/safety/redaction_shapes.py) and on the fourth
held-out corpus (benchmarks/common/credential_heldout4.py; python benchmarks/safety/redaction.py --heldout4): not a
test. S2, single-dash password flags (``-storepass …``), failed its ship rule and is not here."""

from __future__ import annotations

import pytest

from localmem.privacy import redact

from tests.hook_helpers import payload, run_hook, transcript_copy
from tests.test_hook_capture import append, memories, user_line
from tests.test_privacy_hooks import raw_bytes

PASSWORD = "Tq7#Zx2Lm9pW"
WORDS = "Corvid-Lantern!Quay"  # no digit: main's high-entropy rule after "password" does not take it
DISCORD_TOKEN = "aB3dEf6GhIjK9lMnOpQrStUvWxYz0123456789abcdEFGHijklMNOPqrstUVWXyz0123"

CAUGHT = [
    # S1: a "pass:" argument
    ("command-line-password", f"openssl pkcs12 -export -in c.pem -out b.p12 -passout pass:{PASSWORD}", PASSWORD),
    ("command-line-password", f"openssl rsa -in enc.key -out plain.key -passin pass:{PASSWORD}", PASSWORD),
    ("command-line-password", f"apksigner sign --ks release.jks --ks-pass pass:{PASSWORD} app.apk", PASSWORD),
    # S3: a user flag, then -p/-P
    ("command-line-password", f"ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P {PASSWORD} power status", PASSWORD),
    ("command-line-password", f"sqlcmd -S db.acme.dev -U sa -P '{PASSWORD}' -Q \"SELECT @@VERSION\"", PASSWORD),
    ("command-line-password", f"cf login -a https://api.sys.acme.dev -u alice -p {PASSWORD} -o acme", PASSWORD),
    ("command-line-password", f"cqlsh 10.0.0.7 9042 -u cassandra -p {PASSWORD}", PASSWORD),
    # S4: SNMP communities and passphrases
    ("command-line-password", "snmpwalk -v2c -c Qm7x2Lk9pZ 10.0.0.1 1.3.6.1.2.1.1", "Qm7x2Lk9pZ"),
    ("command-line-password", f"snmpget -v3 -l authNoPriv -u monitor -a SHA -A {PASSWORD} 10.0.0.1 sysName.0",
     PASSWORD),
    ("command-line-password", "snmp-server community Qm7x2Lk9pZ RO", "Qm7x2Lk9pZ"),
    # S5: rclone's pass =
    ("credential-setting", "[nas]\ntype = sftp\nhost = nas.local\nuser = alice\npass = Zk3u9-Lq0ePz_rT5mW8xYc2vB",
     "Zk3u9-Lq0ePz_rT5mW8xYc2vB"),
    # S6: Wi-Fi keys
    ("credential-setting", f'network={{\n    ssid="ACME-Office"\n    psk="{PASSWORD}"\n}}', PASSWORD),
    ("credential-setting", f'# /etc/ipsec.secrets\n203.0.113.5 198.51.100.7 : PSK "{PASSWORD}"', PASSWORD),
    ("command-line-password", f"nmcli dev wifi connect ACME-Office password {WORDS}", WORDS),
    # S7: session exports
    ("credential-setting", 'export BW_SESSION="aGVsbG8gd29ybGQgdGhpcyBpcyBhIHNlc3Npb24ga2V5IDEyMzQ1Njc4OTA="',
     "aGVsbG8gd29ybGQgdGhpcyBpcyBh"),
    ("credential-setting", '$ op signin\nexport OP_SESSION_acme="Zx8Kq2Lm9PpR4tY7uW1eN3bV6cX0sA5d"',
     "Zx8Kq2Lm9PpR4tY7uW1eN3bV6cX0sA5d"),
    # S8: user:password to a user key
    ("command-line-password", f'# ~/.curlrc\nuser = "alice:{PASSWORD}"\nsilent', PASSWORD),
    ("command-line-password", f"etcdctl --endpoints=https://10.0.0.3:2379 --user root:{PASSWORD} member list",
     PASSWORD),
    # S9: Oracle's user/password@
    ("connection-string-secret", "sqlplus scott/Qm7x2Lk9pZ@//db.internal:1521/ORCLPDB1", "Qm7x2Lk9pZ"),
    ("connection-string-secret", "expdp system/Qm7x2Lk9pZ@ORCL schemas=HR dumpfile=hr.dmp", "Qm7x2Lk9pZ"),
    # S10: webhook URL tokens
    ("webhook-url-token", f"DISCORD_WEBHOOK_URL=https://discord.com/api/webhooks/123456789012345678/{DISCORD_TOKEN}",
     DISCORD_TOKEN),
    ("webhook-url-token", "curl -X POST https://mm.acme.dev/hooks/k3x9q2m7w1z8p4r6t0y5u2i8o1",
     "k3x9q2m7w1z8p4r6t0y5u2i8o1"),
    # S11: Authorization: key=
    ("authorization-header", "curl -X POST https://fcm.googleapis.com/fcm/send -H 'Authorization: key=AAAAab12cd3:"
                             "APA91bXk9L2mQz8Pp7Rr6Tt5Uu4Vv3Ww2Xx1Yy0Zz'", "APA91bXk9L2mQz8Pp7Rr6Tt5"),
    # S12: an unquoted dotted password (the second with S13)
    ("credential-setting", "DB_PASS=nL0SIXdQ.uzbw", "nL0SIXdQ.uzbw"),
    ("command-line-password", "gpg --batch --yes --passphrase 'aB3.xY7zQ9w' -d backup.tar.gpg", "aB3.xY7zQ9w"),
    # S13: --passphrase
    ("command-line-password", f"gpg --batch --yes --passphrase '{WORDS}' -d backup.tar.gpg | tar x", WORDS),
    # S14: archive passwords
    ("command-line-password", f"7z a -p{PASSWORD} -mhe=on backup.7z ~/Documents", PASSWORD),
    ("command-line-password", f"zip -P {PASSWORD} -r secrets.zip notes/", PASSWORD),
]


@pytest.mark.parametrize(("kind", "text", "secret"), CAUGHT, ids=[f"{i}-{c[0]}" for i, c in enumerate(CAUGHT)])
def test_a_work_list_shape_is_caught(kind, text, secret):
    result = redact(text)
    assert kind in result.findings, result
    assert secret not in result.text and secret[:8] not in result.text, result.text


@pytest.mark.parametrize("text", [
    # S1, S3: no password given, a variable, a port, a path, mysql's prompting -p
    "openssl pkcs12 -export -in cert.pem -out b.p12 -passout env:P12_PASS", "openssl rsa -passin file:pw.txt",
    "ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P $IPMI_PASSWORD sdr list", "psql -U alice -p 5432 shop",
    "docker run -u 1000 -p 8080:80 nginx", "sudo -u deploy mkdir -p /var/www/app", "mysql -u root -p Shop2024",
    "mosquitto_sub -u sensor -p 1883 -t 'home/#'", "cqlsh -u cassandra -p cassandra_password",
    # S4: the public community, variables
    "snmpwalk -v2c -c public 10.0.0.1", 'snmpget -v3 -u monitor -A "$SNMP_AUTH" -X "$SNMP_PRIV" 10.0.0.1',
    # S5, S6: a short or word value, a variable, WPA-PSK as a setting
    "pass = 1", "pass = enabled", "key_mgmt=WPA-PSK", "psk=$WIFI_PSK", "nmcli connection show",
    # S7: an ordinary session setting
    "SESSION_ENGINE=django.contrib.sessions.backends.db", "FLASK_SESSION_TYPE=filesystem",
    "SESSION_COOKIE_AGE=1209600",
    # S8: a user and a group, a variable
    "docker run --user www-data:www-data nginx", "docker run --user 1000:1000 nginx",
    'docker run --user "$(id -u):$(id -g)" app', "--user root:wheel",
    # S9: paths with an @ that are not Oracle's
    "npm install @scope/pkg@1.2.3", "go get golang.org/x/tools@v0.1.0", "uses: actions/checkout@v4",
    # S10: a repository's hook settings, Zapier's short hook
    "https://github.com/acme/web/settings/hooks/12345678", "https://api.github.com/repos/acme/web/hooks/1234/pings",
    "https://hooks.zapier.com/hooks/catch/123456/abcdef1/",
    # S11: an Authorization header naming a variable
    "Authorization: key=$FCM_KEY",
    # S12: dotted names of code
    "password = request.form", "token = getS3Object.x", "api_key=settings.API_KEY",
    "password=X509Certificate.getEncoded", "password: config.dbPassword2",
    # S13, S14: a passphrase from a descriptor or file, a prompting -p, a port after zip
    "gpg --batch --passphrase-fd 0 -d x.gpg", "gpg --passphrase-file pw.txt -d x.gpg", "7z a -p backup.7z docs",
    "unrar x -p- archive.rar", "zip -r backup-2026.zip dir -x '*.git*'",
])
def test_an_innocent_text_of_the_same_shape_is_kept(text):
    assert redact(text).text == text


def test_a_pasted_command_and_webhook_are_stored_redacted_by_the_stop_hook(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    command = f"ipmitool -I lanplus -H 10.0.0.9 -U ADMIN -P {PASSWORD} power status hangs, why?"
    hook = f"the bot posts to https://discord.com/api/webhooks/123456789012345678/{DISCORD_TOKEN} but nothing shows"
    append(transcript, user_line("c0ffee00-0016-4e5f-9a7b-3c2d1e0f9a51", command),
           user_line("c0ffee00-0016-4e5f-9a7b-3c2d1e0f9a52", hook))
    run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    stored = {m["metadata"]["message_uuid"]: m for m in memories(db)}
    first, second = stored["c0ffee00-0016-4e5f-9a7b-3c2d1e0f9a51"], stored["c0ffee00-0016-4e5f-9a7b-3c2d1e0f9a52"]
    assert "-P [redacted: command-line-password]" in first["content"], first["content"]
    assert first["metadata"]["redacted"] == {"count": 1, "kinds": {"command-line-password": 1}}
    assert "webhooks/[redacted: webhook-url-token]" in second["content"], second["content"]
    data = raw_bytes(db)  # row, FTS shadow tables, vectors, dedup keys: none was made from the secret
    for secret in (PASSWORD, DISCORD_TOKEN, DISCORD_TOKEN[20:40]):
        assert secret.encode() not in data


@pytest.mark.parametrize("text", [
    "-passin pass:" * 80_000, "-passin " + "pass:" * 200_000, "-u a " * 200_000, "-u a" + " x" * 500_000,
    "-U a -P " * 130_000, "snmpwalk " + "-v " * 330_000, "snmp-server community " * 45_000, "pass = " * 140_000,
    "psk=" * 250_000, 'PSK "' * 200_000, "nmcli " + "x " * 500_000, "SESSION=" * 125_000,
    "A_" * 400_000 + "SESSION=", "--user a:" * 110_000, "user = " * 140_000, "sqlplus a/" * 100_000,
    "connect " + "a/" * 500_000, "https://a/" + "hooks/" * 170_000, "https://a" + "/b" * 500_000 + "/hooks/",
    "Authorization: key=" * 50_000, "--passphrase " * 75_000, "7z " + "-x " * 330_000, "zip " * 250_000,
    "DB_PASS=" + "aB1." * 250_000,
    # the seed-phrase rule's count of the words after a cue (its first form, unbounded, was quadratic on the first)
    "seed" * 250_000, "phrase " * 150_000, "mnemonic " * 110_000, "seed " + "abandon " * 125_000,
])
def test_hostile_texts_for_the_work_list_shapes_end(text):
    """Each holds a new pattern's start many times over, or one start before a 1 MB run (a quadratic pattern would
    take hours on it); python benchmarks/speed/redaction_cost.py --adversarial times every pattern on such strings
    (linear: about 8× from 128 KB to 1 MB)."""
    result = redact(text)
    assert len(result.text) <= len(text)
