"""Redaction (localmem/privacy/redact.py): what is replaced, what is kept, and that it is safe on hostile text."""

from __future__ import annotations

import pytest

from localmem.privacy import find_secrets, redact, strip_private

from benchmarks.common.credential_corpus import FORMATS, corpus


@pytest.mark.parametrize("kind", sorted(FORMATS))
def test_every_documented_format_is_redacted_in_an_env_file(kind):
    for format_kind, secret, text in corpus(per_format=6):
        if format_kind == kind:
            out = redact(text).text
            assert secret not in out, (kind, text)


def test_placeholder_names_the_kind_and_metadata_counts_without_the_secret():
    text = "STRIPE_SECRET_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dcXYZ\nAWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"
    result = redact(text)
    assert "[redacted: stripe-secret-key]" in result.text
    assert "[redacted: aws-access-key-id]" in result.text
    assert result.findings == {"aws-access-key-id": 1, "stripe-secret-key": 1}
    assert "sk_live" not in repr(result.findings)


def test_url_password_keeps_the_rest_of_the_url():
    out = redact("connect to postgres://app:S3cretPass99@db.example.com:5432/prod please").text
    assert out == "connect to postgres://app:[redacted: url-password]@db.example.com:5432/prod please"


def test_private_key_block_goes_whole_even_unterminated():
    text = "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAABG5vbmU="
    assert "b3BlbnNz" not in redact(text).text


@pytest.mark.parametrize("text", [
    "The key to success is hard work, and my password tip is to use a manager.",
    "tokenizer = BertTokenizer.from_pretrained('bert-base-uncased')",
    "Verify their credentials: Ensure the appraiser is certified.",
    "password = request.form['password']",
    "DB_PASSWORD=${DB_PASSWORD}",
    "api_key: your-api-key-here",
    "My commit was 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f and the build passed.",
])
def test_ordinary_text_and_code_are_kept(text):
    assert redact(text).text == text


@pytest.mark.parametrize("text", [
    'export PGPASSWORD=Xk9mP2vL8qRzT4wQ psql -h db',
    '"accessToken": "Xk9mP2vL8qRzT4wQ"',
    "refreshToken: Xk9mP2vL8qRzT4wQ",
    "adminPassword: Xk9mP2vL8qRzT4wQ",
    "jwtSecret=Xk9mP2vL8qRzT4wQ",
    'authToken = "Xk9mP2vL8qRzT4wQ"',
])
def test_a_credential_word_glued_to_the_end_of_a_name_is_a_secret_name(text):
    """The name holds a credential word as its last part without a separator: an env name
    (PGPASSWORD) or a camelCase key (accessToken, adminPassword), as configs write them."""
    result = redact(text)
    assert "Xk9mP2vL8qRzT4wQ" not in result.text and result.findings == {"secret-assignment": 1}


@pytest.mark.parametrize("text", [
    "tokenizer: BertTokenizerFast",
    "Subtokens: Words are split into pieces",
    "passwordless: enabled for the staging login",
])
def test_a_credential_word_inside_a_longer_word_is_not_a_secret_name(text):
    assert redact(text).text == text


def test_private_regions_are_cut_and_an_unclosed_one_drops_the_rest():
    assert strip_private("a <private>x</private> b <PRIVATE>y") == ("a  b ", 2)
    result = redact("keep <private>secret stuff</private> this")
    assert result.text == "keep  this" and result.findings == {"private-region": 1}
    assert find_secrets("<private>sk_live_4eC39HqLyjWDarjtT1zdp7dc</private>") == {"stripe-secret-key": 1}


def test_redaction_is_idempotent():
    once = redact("export GITHUB_TOKEN=ghp_" + "a1B2" * 9 + "\npassword: Tr0ub4dor&3x")
    assert redact(once.text).text == once.text and not redact(once.text).findings


def test_hostile_text_is_handled_in_bounded_time():
    for text in ["\x00\ud800 token=" + "A1" * 50, "password=" * 20_000, "a" * 1_000_000,
                 "-----BEGIN PRIVATE KEY-----" * 1000, "x" + "=" * 100_000,
                 # each once took time quadratic in its length (backtracking); now linear
                 "sk-" * 50_000, "api-key-" * 20_000, "a_" * 50_000, "a://x:" * 20_000]:
        result = redact(text)
        assert isinstance(result.text, str)
