"""storage/records.to_record: metadata texts parsed once, each record with its own dict."""

from __future__ import annotations

import json

from localmem.storage.records import RECORD_FIELDS, to_record


def row(metadata: str | None) -> dict:
    base = {field: None for field in RECORD_FIELDS}
    return {**base, "id": "m1", "content": "x", "tags": '["a"]', "archived": 0, "metadata": metadata}


def test_a_record_s_metadata_is_its_own_whatever_the_caller_does_with_it() -> None:
    flat = json.dumps({"speaker": "Ann", "session": 3, "score": 0.5, "ok": True, "none": None})
    first = to_record(row(flat))
    first["metadata"]["speaker"] = "changed"
    first["metadata"]["added"] = 1
    second = to_record(row(flat))
    assert second["metadata"] == json.loads(flat)
    nested = json.dumps({"people": ["Ann", "Bo"], "where": {"city": "Oslo"}})
    third = to_record(row(nested))
    third["metadata"]["people"].append("Cy")
    third["metadata"]["where"]["city"] = "Bergen"
    assert to_record(row(nested))["metadata"] == json.loads(nested)


def test_empty_and_non_object_metadata_read_as_before() -> None:
    assert to_record(row(None))["metadata"] == {} and to_record(row(""))["metadata"] == {}
    assert to_record(row("[1, 2]"))["metadata"] == [1, 2]
    assert to_record(row('"text"'))["metadata"] == "text"
