"""Redaction of config files pasted into a session (issue 40): a key that in its file format always holds a secret
(.npmrc's ``_authToken=``/``_auth=``, docker config.json's ``"auth"``, a base64 PEM private key as kubeconfig's
``client-key-data:``, a .pgpass line's password, a URL's password with an empty user), each beside innocent texts of
the same shape that are kept. These formats were held out by redact14 (benchmarks/common/credential_heldout.py's
report half); since these rules were written from them, they are in-sample now."""

from __future__ import annotations

import base64

import pytest

from localmem.privacy import redact

from benchmarks.common.credential_heldout import heldout_corpus
from benchmarks.safety.redaction import caught

NPM_TOKEN = "0b9c1f7e-1d2a-4c2b-9f1e-2a3b4c5d6e7f"
USER_PASS = base64.b64encode(b"ci7x2qk:S3cr3t-Pass!9").decode()
PEM_BODY = "MIIEpAIBAAKCAQEAx9fQz81Kd0pLm4Wv7Yt2Rb6Nc3\n"
KEY_DATA = base64.b64encode(
    f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----\n".encode()).decode()
EC_KEY = base64.b64encode(f"-----BEGIN EC PRIVATE KEY-----\n{PEM_BODY}-----END EC PRIVATE KEY-----\n".encode()).decode()
CERT_DATA = base64.b64encode(f"-----BEGIN CERTIFICATE-----\n{PEM_BODY}-----END CERTIFICATE-----\n".encode()).decode()
PAT = "ukmhfmdxac6klzq5yj46v4d76lpei435qmscrbyojtp3xqvhh2p4"

CAUGHT = [
    ("npmrc-auth", f"//npm.acme.dev/:_authToken={NPM_TOKEN}\nregistry=https://npm.acme.dev/", NPM_TOKEN),
    ("npmrc-auth", f'@acme:registry=https://npm.acme.dev/\n//npm.acme.dev/:_authToken="{NPM_TOKEN}"', NPM_TOKEN),
    ("npmrc-auth", f"registry=https://nexus.acme.dev/repository/npm/\n_auth={USER_PASS}\nalways-auth=true", USER_PASS),
    ("docker-auth", f'{{\n  "auths": {{\n    "registry.acme.dev": {{\n      "auth": "{USER_PASS}"\n    }}\n  }}\n}}',
     USER_PASS),
    ("docker-auth", f"here's my config.json: {{'auths': {{'ghcr.io': {{'auth': '{USER_PASS}'}}}}}}", USER_PASS),
    ("private-key", f"users:\n- name: admin\n  user:\n    client-certificate-data: {CERT_DATA}\n"
                    f"    client-key-data: {KEY_DATA}", KEY_DATA[20:]),
    ("private-key", f"data:\n  tls.crt: {CERT_DATA}\n  tls.key: {EC_KEY}", EC_KEY[20:]),
    ("secret-assignment", "users:\n- name: ci\n  user:\n    token: 8f3kq0x7vd81mzl4c6nq3w5e",
     "8f3kq0x7vd81mzl4c6nq3w5e"),
    ("pgpass-password", "# ~/.pgpass\ndb.internal:5432:app:deploy:Xq9#kL2mP0zR", "Xq9#kL2mP0zR"),
    ("pgpass-password", "*:*:*:postgres:hunter2\\:x22", "hunter2\\:x22"),
    ("url-password", f"git clone https://:{PAT}@dev.azure.com/acme/web/_git/web", PAT),
    ("url-password", "REDIS_URL=redis://:Kq9xZ2mL7pWv@cache.internal:6379/0", "Kq9xZ2mL7pWv"),
]

KEPT = [
    "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    "_auth=true",
    "use _auth = <base64 of user:password> in .npmrc",
    '{"auth": "none"}',
    "auth: true",
    '{"auth": "Zm9vYmFyYmF6"}',  # base64 of "foobarbaz": not user:password
    f"    client-certificate-data: {CERT_DATA}",
    f"    certificate-authority-data: {CERT_DATA}",
    "localhost:5432:*:*:*",  # a password of "*" is a placeholder, not a password
    "localhost:5432",
    "db.internal:5432:app:deploy:$PGPASS",
    "1:02:03:04:05",
    "root:x:0:0:root:/root:/bin/bash",
    "sudo:x:27:alice",
    "http://[::1]:8080/x and http://example.com:8080/",
]


@pytest.mark.parametrize("kind, text, secret", CAUGHT, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CAUGHT)])
def test_a_config_file_secret_is_caught(kind, text, secret):
    result = redact(text)
    assert secret not in result.text and secret[:12] not in result.text, result.text
    assert kind in result.findings, result.findings


@pytest.mark.parametrize("text", KEPT)
def test_an_innocent_config_line_of_the_same_shape_is_kept(text):
    assert redact(text).text == text


def test_the_config_formats_of_the_held_out_corpus_are_caught():
    """In-sample now: these formats' misses are what the rules were written from."""
    names = {"npmrc", "npmrc-auth", "docker-config-auth", "kubeconfig-client-key", "pgpass", "redis-url-no-user"}
    texts = [(name, secret, text) for name, secret, text in heldout_corpus() if name in names]
    # A base64 PEM begins "LS0tLS1CRUdJTi" ("-----BEGIN") as the certificate kept beside it does: look past it.
    missed = [text for _, secret, text in texts
              if not caught(secret.removeprefix("LS0tLS1CRUdJTi"), redact(text).text, 12 if len(secret) >= 24 else 8)]
    assert len(texts) == 72 and not missed, missed


@pytest.mark.parametrize("text", [
    "_authToken=" * 100_000, "_auth=" + "Q" * 1_000_000, '"auth": "' + "QUJD" * 250_000,
    "LS0tLS1CRUdJTi" * 70_000, "LS0tLS1CRUdJTi" + "A" * 1_000_000, "a:1:b:c:" * 125_000,
    "h:5432:d:u:" + "\\" * 1_000_000, "x://:" * 200_000,
])
def test_hostile_texts_for_the_config_rules_end(text):
    result = redact(text)
    assert len(result.text) <= len(text)
