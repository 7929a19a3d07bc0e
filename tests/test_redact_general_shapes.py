"""Redaction's general shapes (issue 40): credentials in formats no rule was written from, caught by what marks a
secret in any tool (a key block of any kind, an Authorization header of any scheme, a cookie, a netrc entry, a name
ending in "key" given a random value, a token with dots), each beside innocent texts of the same shape that are kept;
and through the Stop hook, run as Claude Code runs it, config files pasted into a question."""

from __future__ import annotations

import base64
import json

import pytest

from localmem.privacy import redact

from benchmarks.common.credential_heldout import FORMATS, heldout_corpus, split
from tests.hook_helpers import payload, run_hook, transcript_copy
from tests.test_hook_capture import append, memories, user_line
from tests.test_privacy_hooks import raw_bytes

PUTTY_PRIVATE = base64.b64encode(bytes(range(7, 55))).decode()
SSH2_BODY = "AAAAB3NzaC1yc2EAAAADAQABAAABAQCx9f" + "Qz81Kd0pLm4Wv7Yt2Rb6Nc3" * 2
CAUGHT = [
    ("private-key", f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: k\nPublic-Lines: 1\n"
                    f"AAAAC3NzaC1lZDI1NTE5AAAAIMz\nPrivate-Lines: 1\n{PUTTY_PRIVATE}\nPrivate-MAC: 0a1b2c",
     PUTTY_PRIVATE),
    ("private-key", f"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"rsa-key\"\n{SSH2_BODY}\n"
                    "---- END SSH2 ENCRYPTED PRIVATE KEY ----", SSH2_BODY),
    ("private-key", f"-----BEGIN PGP SECRET KEY BLOCK-----\n\n{SSH2_BODY}\n-----END PGP SECRET KEY BLOCK-----",
     SSH2_BODY),
    ("authorization-header", "curl -H 'Authorization: SSWS 00RnTpyeH1EARkN7Rd1KWOvgfXsGr' https://acme.okta.com",
     "00RnTpyeH1EARkN7Rd1KWOvgfXsGr"),
    ("authorization-header", "Proxy-Authorization: Negotiate YIIGhgYGKwYBBQU2oII6ejCC3n", "YIIGhgYGKwYBBQU2oII6ejCC3n"),
    ("cookie", "curl 'https://app.acme.dev/me' -H 'Cookie: theme=dark; session=u1cqkb7vxjii6vvccogltwqvp8ze'",
     "u1cqkb7vxjii6vvccogltwqvp8ze"),
    ("cookie", "curl -b 'sessionid=9f2kq0x7vd81mzl4c6nq3w5e' https://admin.acme.dev/", "9f2kq0x7vd81mzl4c6nq3w5e"),
    ("cookie", "Set-Cookie: sid=Qm9b7Lx2Zt4Wc8Vn1Rp6Ks3; Path=/; HttpOnly", "Qm9b7Lx2Zt4Wc8Vn1Rp6Ks3"),
    ("netrc-password", "machine ftp.example.com login alice password nijRj+93RRf*K99Zq+", "nijRj+93RRf*K99Zq+"),
    ("netrc-password", "# ~/.netrc\nmachine nexus.internal\nlogin deploy\npassword KYCCYIu%e*RBTP\n", "KYCCYIu%e*RBTP"),
    ("keyed-value", "  license_key: 'ab87271835151fd7bd7df35dc1a13dc5507bNRAL'",
     "ab87271835151fd7bd7df35dc1a13dc5507bNRAL"),
    ("keyed-value", "export DD_APP_KEY=6df311c181b62aa800c1654402905796f8a52d8c",
     "6df311c181b62aa800c1654402905796f8a52d8c"),
    ("keyed-value", "const appKey = \"k3J9xQ2mZ7vB4nL8pW1cT6\";", "k3J9xQ2mZ7vB4nL8pW1cT6"),
    ("keyed-value", "my new relic user key is NRAK-QPIP1FUOFA8PSNSHNPXWJIWPLMR, why 401?",
     "NRAK-QPIP1FUOFA8PSNSHNPXWJIWPLMR"),
    # A dotted token (a part of 16+ characters with digits and letters) is not code such as request.form.
    ("secret-assignment", "AIRTABLE_API_KEY=patZnUwmBnVEYwzZF.e2610899b5006aaa871e59da1c1b69216d621fa8",
     "e2610899b5006aaa871e59da1c1b69216d621fa8"),
    ("secret-assignment", '"token": "YscdFCDXZxgfEW.atlasv1.ED4oRUkj6AP23dHZPrPJOSrQpWgJivsAYJ81uiE9oAl"',
     "ED4oRUkj6AP23dHZPrPJOSrQpWgJivsAYJ81uiE9oAl"),
]

KEPT = [
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEq3\n-----END PUBLIC KEY-----",
    "---- BEGIN SSH2 PUBLIC KEY ----\nComment: \"rsa-key\"\nAAAAB3NzaC1yc2EAAAADAQABAAABAQCx9f\n"
    "---- END SSH2 PUBLIC KEY ----",
    "Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIMzQ2mZ7vB4nL8pW1cT6",
    "Private-Lines is the number of base64 lines that follow in a .ppk file",
    "the Authorization header is required, see authorization: below",
    "Authorization: Bearer ${GITHUB_TOKEN}",
    "curl -H 'Cookie: theme=dark; lang=en-GB' https://example.com",
    "curl -b cookies.txt -c cookies.txt https://example.com",
    "set a cookie: it expires when the browser closes",
    "Display information related to login by password (see also -afL).",
    "machine name login name password string",
    "machine nexus.internal login deploy password $NEXUS_PASSWORD",
    "labels of (key = 'ExistingLabelKey1', value = 'x')",
    "--md5-authentication-key=MD5_AUTHENTICATION_KEY",
    "--set-kms-key=projects/my-project/locations/us-central1/keyRings/my-keyring/cryptoKeys/my-key",
    "rd.luks.key=b40f1abf-2a53-400a-889a-2eccc27eaa40=/keyfile:LABEL=keydev",
    "public_key: k3J9xQ2mZ7vB4nL8pW1cT6y5",
    "ssh_key: AAAAB3NzaC1yc2EAAAADAQABAAABAQCx9fQz81Kd0pLm4",
    "primary_key: id, sort_key: created_at",
    "the key is to keep the cache warm",
    "password = request.form.get('password')",
    "api_key = settings.API_KEY",
]


@pytest.mark.parametrize("kind, text, secret", CAUGHT, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CAUGHT)])
def test_a_general_shape_is_caught(kind, text, secret):
    result = redact(text)
    assert secret not in result.text and secret[:12] not in result.text, result.text
    assert kind in result.findings, result.findings


@pytest.mark.parametrize("text", KEPT)
def test_an_innocent_text_of_the_same_shape_is_kept(text):
    assert redact(text).text == text


def test_the_develop_half_of_the_held_out_formats_is_caught():
    """The half the general rules were developed on (the other half is the held-out figure, not a test)."""
    develop, _ = split()
    missed = [(name, text) for name, secret, text in heldout_corpus() if name in develop
              and secret[:12 if len(secret) >= 24 else 8] in redact(text).text]
    # Left: a token in code with no credential word (Api('pat….…')) and a short dotted password.
    assert {name for name, _ in missed} <= {"airtable-pat", "pypirc"}, missed
    assert len(missed) <= 8 and len(develop) == len(FORMATS) // 2


NETRC_PASSWORD = "KYCCYIu%e*RBTP9x"
TFRC_TOKEN = "YscdFCDXZxgfEW.atlasv1.ED4oRUkj6AP23dHZPrPJOSrQpWgJivsAYJ81uiE9oAlKlcDEPJ9q0A9j4hYyDvAe90n"


def test_config_files_pasted_into_a_question_are_stored_redacted_by_the_stop_hook(tmp_path):
    db, transcript = tmp_path / "m.db", transcript_copy(tmp_path)
    netrc = ("pip keeps asking me for a password although my ~/.netrc has the index in it:\n\n"
             f"machine nexus.internal\nlogin deploy\npassword {NETRC_PASSWORD}\n\n"
             "why does pip not read the netrc file?")
    tfrc = ("terraform plan says my token is invalid; ~/.terraform.d/credentials.tfrc.json is "
            + json.dumps({"credentials": {"app.terraform.io": {"token": TFRC_TOKEN}}})
            + " and it worked yesterday, what changed?")
    append(transcript, user_line("c0ffee00-0001-4e5f-9a7b-3c2d1e0f9a51", netrc),
           user_line("c0ffee00-0001-4e5f-9a7b-3c2d1e0f9a52", tfrc))
    out, err = run_hook(db, "Stop", payload("stop", tmp_path, transcript))
    stored = {m["metadata"]["message_uuid"]: m for m in memories(db)}
    first, second = stored["c0ffee00-0001-4e5f-9a7b-3c2d1e0f9a51"], stored["c0ffee00-0001-4e5f-9a7b-3c2d1e0f9a52"]
    assert "password [redacted: netrc-password]" in first["content"], first["content"]
    assert first["metadata"]["redacted"] == {"count": 1, "kinds": {"netrc-password": 1}}
    assert '"token": "[redacted: secret-assignment]"' in second["content"], second["content"]
    data = raw_bytes(db)  # row, FTS shadow tables, vectors, dedup keys: none was made from the secret
    for secret in (NETRC_PASSWORD, TFRC_TOKEN, TFRC_TOKEN.split(".")[-1]):
        assert secret.encode() not in data


@pytest.mark.parametrize("text", [
    "Cookie: " + "a=b; " * 200_000, "curl -b 'x=" + "a" * 1_000_000, "Cookie: s=" + "Zk9" * 333_333,
    "login u password " * 60_000, "machine\n" * 125_000 + "password", "key=" * 250_000, "Key: " + "k3J9" * 250_000,
    "---- BEGIN " * 90_000, "----BEGIN PRIVATE KEY----" * 40_000, "Private-Lines: 1\n" + "QUJD\n" * 200_000,
    "Authorization: " + "x " * 500_000, "Proxy-Authorization: Negotiate " + "Y" * 1_000_000,
    "token: " + ".".join(["a1b2c3d4e5f6g7h8"] * 60_000),
])
def test_hostile_texts_for_the_general_shapes_end(text):
    """Each holds a new rule's start many times over, or one start before a 1 MB run; python benchmarks/speed/
    redaction_cost.py --adversarial times every rule on such strings (linear: about 8× from 128 KB to 1 MB)."""
    result = redact(text)
    assert len(result.text) <= len(text)
