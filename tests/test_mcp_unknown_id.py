"""MCP tools given an id that does not exist answer with an error naming it (issue 13, item 10).

On main ``recall_memory`` with an unknown ``memory_id`` answered "No memories
found matching your query." with ``isError`` false, and update_memory,
delete_memory and associate_memories said "Memory not found" / "One or both
memories do not exist" without saying which id.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

from localmem import MemoryStore  # noqa: E402
from tests.test_mcp import StdioServer  # noqa: E402

MISSING_ID = "00000000-0000-4000-8000-000000000000"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    db = tmp_path_factory.mktemp("mcp-unknown-id") / "memory.db"
    with MemoryStore(db, embedder="hash") as store:
        known = store.store("A memory that exists")
    running = StdioServer(db)
    running.known = known  # type: ignore[attr-defined]
    yield running
    running.close()


@pytest.mark.parametrize(("tool", "args"), [
    ("recall_memory", {"memory_id": MISSING_ID}),
    ("recall_memory", {"memory_id": MISSING_ID, "format": "json"}),
    ("update_memory", {"memory_id": MISSING_ID, "importance": 0.3}),
    ("delete_memory", {"memory_id": MISSING_ID}),
    ("associate_memories", {"memory1_id": "KNOWN", "memory2_id": MISSING_ID, "type": "RELATES_TO",
                            "strength": 0.5}),
    ("associate_memories", {"memory1_id": MISSING_ID, "memory2_id": "KNOWN", "type": "RELATES_TO",
                            "strength": 0.5}),
    ("associate_memories", {"memory1_id": MISSING_ID, "memory2_id": "KNOWN", "remove": True}),
])
def test_unknown_id_is_an_error_naming_it(server, tool, args):
    args = {k: server.known if v == "KNOWN" else v for k, v in args.items()}
    result: Any = server.call(tool, args)
    assert result.is_error, result.content[0].text
    text = result.content[0].text
    assert MISSING_ID in text and tool in text
    assert "No memories found" not in text
    assert result.structured_content["error"] == "not_found"
    assert result.structured_content["code"] == 404


def test_a_known_id_still_answers(server):
    result: Any = server.call("recall_memory", {"memory_id": server.known})
    assert not result.is_error
    assert result.structured_content["count"] == 1
