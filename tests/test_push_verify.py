"""``localmem push --verify`` compares the server's copy field by field; what a server sends is not trusted."""

from __future__ import annotations

import json

from localmem.replication.push_verify import compare

ROW = {"id": "m1", "content": "the orders service uses PostgreSQL", "type": "Decision", "importance": 0.7,
       "confidence": 0.9, "timestamp": "2026-01-02T03:04:05+00:00", "t_valid": None, "t_invalid": None,
       "tags": json.dumps(["project:orders"]), "metadata": json.dumps({"source": "notes"})}


def _remote(metadata):
    return {"content": ROW["content"], "type": "Decision", "importance": 0.7, "confidence": 0.9,
            "timestamp": ROW["timestamp"], "t_valid": None, "t_invalid": None, "tags": ["project:orders"],
            "metadata": metadata}


def test_the_same_memory_does_not_differ():
    assert compare(ROW, _remote({"source": "notes"}), {}) == []


def test_metadata_text_nested_past_pythons_recursion_limit_is_a_difference_not_a_crash():
    # A server (or whatever answers at its URL) may send metadata as JSON text of any depth.
    deep = "[" * 100_000 + "]" * 100_000
    differences = compare(ROW, _remote(deep), {})
    assert [d["field"] for d in differences] == ["metadata"]
    assert differences[0]["remote"] == {}
