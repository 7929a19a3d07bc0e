"""The write path's shortcuts (issue 44, item 4) answer exactly as the long way did.

- ``validate_uuid`` returns a canonical UUID without parsing it, and parses every other form;
- ``associate`` finds both memories and the pair's current edge in one statement, and still
  names the memories that do not exist;
- a row's dedup key is built from the thread key the write already has, and its content
  normalised with string methods instead of two regular expressions;
- the text a dedup key hashes is put together from its JSON strings, as the JSON encoder wrote it.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from localmem import NotFoundError, ValidationError
from localmem.storage import dedup_keys
from localmem.storage.memory_fields import build_rows
from localmem.text import generate_summary
from localmem.validation import validate_uuid
from tests.store_helpers import FIXED_NOW, new_store

MISSING = "00000000-0000-4000-8000-000000000009"


def test_canonical_uuids_pass_unchanged_and_every_other_form_is_still_parsed():
    rng = random.Random(3)
    for _ in range(2000):
        value = str(uuid.UUID(int=rng.getrandbits(128)))
        assert validate_uuid(value) == str(uuid.UUID(value)) == value
    canonical = "12345678-1234-5678-1234-567812345678"
    for form in (canonical.upper(), "{" + canonical + "}", canonical.replace("-", ""),
                 f"  {canonical}\n", f"urn:uuid:{canonical}"):
        assert validate_uuid(form) == canonical
    for bad in (canonical + "\n0", canonical[:-1], canonical + "0", canonical.replace("-", "_"),
                canonical[:-1] + "\x00", canonical[:-1] + "g", "", 12345):
        with pytest.raises(ValidationError, match="field_x must be a valid UUID"):
            validate_uuid(bad, "field_x")


def test_associate_creates_updates_and_names_missing_memories(tmp_path):
    store = new_store(str(tmp_path / "s.db"))
    a, b = store.store("first"), store.store("second")
    created = store.associate(a, b, type="LEADS_TO", strength=0.4)
    assert "updated" not in created and created["strength"] == 0.4
    again = store.associate(a, b, type="LEADS_TO", strength=0.9)
    assert again["updated"] is True and again["previous_strength"] == 0.4
    other_type = store.associate(a, b, type="PART_OF", strength=0.7)
    assert "updated" not in other_type  # another type of the same pair is a new edge
    reverse = store.associate(b, a, type="LEADS_TO")
    assert "updated" not in reverse
    assert store.conn.execute("SELECT count(*) FROM edges").fetchone()[0] == 3
    for first, second, named in ((a, MISSING, [MISSING]), (MISSING, b, [MISSING]),
                                 (MISSING, "00000000-0000-4000-8000-00000000000a",
                                  [MISSING, "00000000-0000-4000-8000-00000000000a"])):
        with pytest.raises(NotFoundError) as caught:
            store.associate(first, second)
        assert f"not found: {', '.join(named)}" in str(caught.value)
    assert store.conn.execute("SELECT count(*) FROM edges").fetchone()[0] == 3


def test_a_rows_key_from_its_thread_is_the_key_from_its_fields():
    items = [{"content": "Same words.", "context": "work", "tags": ["a", "B"]},
             {"content": "turn text", "context": "chat", "metadata": {"session": "s1"},
              "timestamp": "2024-01-02T03:04:05+00:00"},
             {"content": "turn text", "tags": ["session:s9"]}]
    for row in build_rows(items, now=FIXED_NOW, frames=1):
        assert dedup_keys.row_key(row, row.thread) == dedup_keys.dedup_key(
            row.content, row.context, row.tags, row.metadata, row.timestamp)
    threaded = build_rows(items[1:2], now=FIXED_NOW, frames=1)[0]
    assert threaded.thread is not None
    assert dedup_keys.row_key(threaded, threaded.thread) != dedup_keys.row_key(threaded, None)


def _normalised_by_regex(content: str) -> str:
    """normalise_content as it was written with regular expressions (the keys stored must not change)."""
    text = content
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = re.sub(r"\s+", " ", text.casefold()).strip()
    stripped = re.sub(r"[\s.!。！…]+$", "", text)
    return stripped if stripped else text


SPACES_AND_MARKS = "ab .!?。！…\t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u2028\u202f\u3000\u200bÉßﬁ\u00adK\ufeff"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=SPACES_AND_MARKS, max_size=30) | st.text(max_size=30))
def test_content_is_normalised_as_the_regular_expressions_did(text):
    assert dedup_keys.normalise_content(text) == _normalised_by_regex(text)


_KEY_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# Quotes, backslashes, control characters, separators and non-ASCII: what JSON escapes or keeps.
JSON_AWKWARD = 'a"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029é中😀 ,:[]{}null'


@settings(max_examples=400, deadline=None)
@given(content=st.text(alphabet=JSON_AWKWARD, max_size=20) | st.text(max_size=20),
       context=st.text(alphabet=JSON_AWKWARD, max_size=8),
       tags=st.lists(st.text(alphabet=JSON_AWKWARD, max_size=6), max_size=4),
       thread=st.none() | st.text(alphabet=JSON_AWKWARD, min_size=1, max_size=8),
       timestamp=st.text(alphabet=JSON_AWKWARD, max_size=8))
def test_the_key_text_is_what_the_json_encoder_wrote(content, context, tags, thread, timestamp):
    """The keys stored must not change: the hand-built text against the encoder the key used."""
    scope = [context, sorted({t.lower() for t in tags}), [thread, timestamp] if thread else None]
    expected = _KEY_ENCODER.encode([dedup_keys.normalise_content(content), scope])
    assert dedup_keys.key_text(content, context, tags, thread, timestamp) == expected


@pytest.mark.parametrize("content, summary", [
    ("Met Dr. Smith today. He was late.", "Met Dr. Smith today."),
    ("   . Leading mark. Then more.", "."),  # nothing before the first mark: no word to check
    ("J. Smith signed. Done.", "J. Smith signed."),
    ("e.g. this one. And that.", "e.g. this one."),
    ("No end at all", "No end at all"),
])
def test_summaries_stop_at_the_first_sentence_not_after_an_abbreviation(content, summary):
    assert generate_summary(content) == summary
