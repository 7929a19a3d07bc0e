"""The MCP server: response budgeting/formatting units, tool handlers, and the stdio server end to end.

The end-to-end tests talk to ``python -m localmem.mcp_server --db <tmp> --embedder hash``
through the official SDK's stdio client; one server process serves the whole module.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from localmem.mcp_server import formatting  # noqa: E402
from localmem.mcp_server.formatting import (  # noqa: E402
    DEFAULT_RECALL_TOKEN_BUDGET,
    RESPONSE_ENVELOPE_RESERVE_TOKENS,
    RecallBudgetError,
    build_recall_response,
    estimate_tokens,
    recall_token_budget,
)
from localmem.mcp_server.handlers import call_tool  # noqa: E402
from localmem.mcp_server.recall_tool import RANKED_ONLY_PARAMS  # noqa: E402
from localmem.mcp_server.tools import TOOL_NAMES  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ID1 = "11111111-1111-4111-8111-111111111111"


def make_item(n: int, content: str = "short content", **extra: Any) -> dict[str, Any]:
    memory = {
        "memory_id": f"mem-{n}", "content": content, "summary": None, "tags": ["alpha", "beta"],
        "importance": 0.9, "created_at": "2025-01-15T10:30:00+00:00",
        "updated_at": "2025-01-16T10:30:00+00:00", "last_accessed": "2025-01-17T10:30:00+00:00",
        "metadata": {"source": "test", "lang": "en"}, "type": "Decision", "confidence": 0.8,
        "t_valid": "2025-01-15T10:30:00+00:00", "t_invalid": None, "archived": False,
    }
    memory.update(extra.pop("memory", {}))
    item = {"id": f"mem-{n}", "match_type": "vector", "final_score": 0.7923, "match_score": 0.82,
            "relation_score": 0.0, "source": "vector", "score_components": {"vector": 0.82},
            "relations": [], "memory": memory}
    item.update(extra)
    return item


def ranked(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"results": items, "count": len(items), "mode": "ranked", **extra}


# -- budget arithmetic -------------------------------------------------------------------


@pytest.mark.parametrize("raw, expected", [
    (None, DEFAULT_RECALL_TOKEN_BUDGET), ("", DEFAULT_RECALL_TOKEN_BUDGET), ("5000", 5000),
    (" 7000 ", 7000), ("0", DEFAULT_RECALL_TOKEN_BUDGET), ("-5", DEFAULT_RECALL_TOKEN_BUDGET),
    ("1.5", DEFAULT_RECALL_TOKEN_BUDGET), ("12k", DEFAULT_RECALL_TOKEN_BUDGET), ("1e4", DEFAULT_RECALL_TOKEN_BUDGET),
])
def test_token_budget_env_is_a_strict_positive_integer(monkeypatch, raw, expected):
    if raw is None:
        monkeypatch.delenv("AUTOMEM_RECALL_TOKEN_BUDGET", raising=False)
    else:
        monkeypatch.setenv("AUTOMEM_RECALL_TOKEN_BUDGET", raw)
    assert recall_token_budget() == expected


def test_tokens_are_chars_over_two_and_a_half_rounded_up():
    assert [estimate_tokens(n) for n in (0, 1, 2, 3, 5, 6, 2500)] == [0, 1, 1, 2, 2, 3, 1000]


def test_content_preview_cuts_at_400_with_ellipsis():
    assert formatting.content_preview("x" * 400, True) == ("x" * 400, False, 400)
    preview, truncated, chars = formatting.content_preview("y" * 900, True)
    assert preview == "y" * 400 + "…" and truncated and chars == 900
    assert formatting.content_preview("y" * 900, False) == ("y" * 900, False, 900)


def test_relation_stubs_keep_three_with_100_char_summaries():
    relations = [{"type": "RELATES_TO", "strength": 0.5, "kind": "k",
                  "memory": {"id": f"r{i}", "summary": "s" * 150}} for i in range(5)]
    relations.append({"type": "EVOLVED_INTO", "strength": 0.9, "from": "seed-1"})
    stubs, total = formatting.relation_stubs(relations)
    assert total == 6 and len(stubs) == 3
    assert stubs[0] == {"id": "r0", "type": "RELATES_TO", "strength": 0.5, "kind": "k",
                        "summary": "s" * 100 + "…"}
    assert formatting.relation_stub(relations[-1]) == {"from": "seed-1", "type": "EVOLVED_INTO", "strength": 0.9}


# -- formats -------------------------------------------------------------------------------


def test_text_line_format_header_and_notes():
    item = make_item(1, "Chose PostgreSQL.", relations=[{"type": "RELATES_TO"}, {"type": "LEADS_TO"}],
                     expanded_from_entity="rachel", deduped_from=["a"])
    result = ranked([item], dedup_removed=2, expansion={"enabled": True, "expanded_count": 1},
                    entity_expansion={"enabled": True, "expanded_count": 1, "entities_found": ["rachel"]},
                    state_filter={"current_only": True, "suppressed_count": 1, "replacement_count": 1})
    response = build_recall_response(result, "text")
    assert len(response.texts) == 1
    text = response.texts[0]
    assert text.startswith("Found 1 memory (2 duplicates removed; 1 via entity expansion (rachel); "
                           "1 via relation expansion; state filter suppressed 1, replacements 1):\n\n")
    assert ("1. Chose PostgreSQL. [alpha, beta] (importance: 0.9) score=0.792 [vector] relations=2 "
            "[via entity: rachel] (deduped x1)\n   ID: mem-1\n   Created: 2025-01-15T10:30:00+00:00"
            "  Updated: 2025-01-16T10:30:00+00:00") in text
    structured = response.structured
    assert structured["count"] == 1 and structured["mode"] == "ranked" and structured["dedup_removed"] == 2
    first = structured["results"][0]
    assert first["memory_id"] == "mem-1" and first["content"] == "Chose PostgreSQL."
    assert "score_components" not in first and "metadata" not in first and "truncation" not in structured


def test_importance_prints_like_javascript():
    text = build_recall_response(ranked([make_item(1, memory={"importance": 1.0})]), "text").texts[0]
    assert "(importance: 1)" in text


def test_no_results_text():
    response = build_recall_response(ranked([], dedup_removed=0), "text")
    assert response.texts == ["No memories found matching your query."]
    assert response.structured["results"] == [] and response.structured["count"] == 0



def test_an_answer_min_score_emptied_says_so():
    gate = {"min_score": 0.9, "adaptive_floor": None, "filtered_count": 0, "candidates_below_min_score": 3}
    response = build_recall_response(ranked([], score_filter=gate), "text")
    assert response.texts == ["No memories found matching your query. (3 candidates below min_score left out)"]


def test_detailed_collapses_metadata_and_relations():
    relations = [{"type": "RELATES_TO", "strength": 0.5, "memory": {"id": f"r{i}", "summary": "rel"}}
                 for i in range(5)]
    item = make_item(1, "c" * 450, relations=relations)
    response = build_recall_response(ranked([item]), "detailed")
    first = response.structured["results"][0]
    assert first["metadata_keys"] == ["source", "lang"] and "metadata" not in first
    assert len(first["relations"]) == 3 and first["relations_total"] == 5
    assert first["type"] == "Decision" and first["confidence"] == 0.8
    assert first["content"] == "c" * 400 + "…" and first["content_truncated"] and first["content_chars"] == 450
    assert "score_components" not in first
    text = response.texts[0]
    for line in ("  ID: mem-1", "  Type: Decision", "  Accessed: 2025-01-17T10:30:00+00:00",
                 "  Importance: 0.900", "  Confidence: 0.800", "  Tags: alpha, beta", "  Score: 0.792",
                 "  Match: vector"):
        assert line in text
    assert 'recall_memory({ memory_id: "<id>" })' in text


def test_json_is_raw_passthrough_with_pretty_text():
    relations = [{"type": "RELATES_TO", "strength": 0.5, "memory": {"id": f"r{i}"}} for i in range(5)]
    item = make_item(1, "j" * 900, relations=relations)
    response = build_recall_response(ranked([item]), "json")
    first = response.structured["results"][0]
    assert first["content"] == "j" * 900 and "content_truncated" not in first
    assert first["metadata"] == {"source": "test", "lang": "en"} and len(first["relations"]) == 5
    assert first["score_components"] == {"vector": 0.82}
    assert first["t_valid"] == "2025-01-15T10:30:00+00:00" and first["archived"] is False
    assert "t_invalid" not in first  # absent while current
    assert json.loads(response.texts[0]) == response.structured


def test_items_format_one_block_per_memory():
    response = build_recall_response(ranked([make_item(1), make_item(2, "x" * 500)]), "items")
    assert response.texts[0] == "[mem-1] short content"
    assert response.texts[1] == "[mem-2] " + "x" * 400 + "…"
    assert response.texts[2].startswith("[Some content previews truncated")


def test_summary_is_additive():
    item = make_item(1, "First sentence. Second sentence.", memory={"summary": "First sentence."})
    first = build_recall_response(ranked([item]), "text").structured["results"][0]
    assert first["summary"] == "First sentence." and first["content"] == "First sentence. Second sentence."
    same = make_item(2, "Only sentence.", memory={"summary": "Only sentence."})
    assert "summary" not in build_recall_response(ranked([same]), "text").structured["results"][0]
    empty = make_item(3, "", memory={"summary": "Stands in."})
    assert "1. Stands in." in build_recall_response(ranked([empty]), "text").texts[0]


# -- the budget --------------------------------------------------------------------------------


def test_small_budget_truncates_keeps_first_and_adds_trailer(monkeypatch):
    monkeypatch.setenv("AUTOMEM_RECALL_TOKEN_BUDGET", "1500")
    items = [make_item(i, f"{i} " + "z" * 1500) for i in range(12)]
    result = ranked(items)
    raw_chars = len(json.dumps(result))
    assert estimate_tokens(raw_chars) > 1500 * 5  # the raw answer is far over budget
    response = build_recall_response(result, "text")
    structured = response.structured
    kept = len(structured["results"])
    assert 1 <= kept < 12 and structured["results"][0]["memory_id"] == "mem-0"
    assert structured["truncation"] == {"applied": True, "omitted_results": 12 - kept,
                                        "reason": "response_token_budget"}
    assert structured["count"] == 12
    text = response.texts[0]
    assert text.startswith(f"Found 12 memories (showing {kept}):")
    assert f"[Response budget: showing {kept} of 12 results; {12 - kept} omitted." in text
    assert 'fetch full records with recall_memory({ memory_id: "<id>" })' in text
    # Exactly as many items as fit: the costs of the kept ones fit, one more would not.
    costs = []
    for i, item in enumerate(items):
        one, preview, _ = formatting.structured_item(item, "text", budgeted=True, id_fetch=False)
        costs.append(estimate_tokens(formatting.item_cost(one, formatting.render_text_block(item, preview, i), "text")))
    assert RESPONSE_ENVELOPE_RESERVE_TOKENS + sum(costs[:kept]) <= 1500
    assert RESPONSE_ENVELOPE_RESERVE_TOKENS + sum(costs[:kept + 1]) > 1500


def test_first_item_kept_even_when_over_budget():
    response = build_recall_response(ranked([make_item(1, "q" * 1900), make_item(2)]), "json", budget_tokens=900)
    assert [r["memory_id"] for r in response.structured["results"]] == ["mem-1"]
    assert response.structured["truncation"]["omitted_results"] == 1


def test_id_fetch_is_never_truncated():
    result = formatting.id_fetch_result({"id": ID1, "content": "w" * 1900, "timestamp": "2025-01-01T00:00:00+00:00",
                                         "t_valid": "2025-01-01T00:00:00+00:00", "t_invalid": None,
                                         "archived": False, "tags": [], "importance": 0.5})
    response = build_recall_response(result, "text", budget_tokens=10)
    first = response.structured["results"][0]
    assert first["content"] == "w" * 1900 and "content_truncated" not in first
    assert first["t_valid"] and first["archived"] is False and first["score_components"] == {}
    assert "truncation" not in response.structured and response.structured["mode"] == "id_fetch"


def test_enumeration_page_trimmed_still_pages_on():
    page = {"memories": [{"id": f"m{i}", "content": "e" * 1500, "tags": ["t"], "importance": 0.5,
                          "timestamp": "2025-01-01T00:00:00+00:00"} for i in range(10)],
            "count": 10, "limit": 10, "offset": 20, "has_more": False, "tags": ["t"]}
    response = build_recall_response(formatting.enumeration_result(page), "json", budget_tokens=3000)
    structured = response.structured
    kept = len(structured["results"])
    assert 1 <= kept < 10
    assert structured["has_more"] is True and structured["next_offset"] == 20 + kept
    assert structured["truncation"]["omitted_results"] == 10 - kept and structured["mode"] == "enumeration"


def test_enumeration_first_record_too_large_is_an_error():
    page = {"memories": [{"id": "m0", "content": "e" * 1900, "timestamp": "2025-01-01T00:00:00+00:00"}],
            "count": 1, "limit": 5, "offset": 7, "has_more": False, "tags": ["t"]}
    with pytest.raises(RecallBudgetError, match="offset 7"):
        build_recall_response(formatting.enumeration_result(page), "json", budget_tokens=1000)


def test_budget_applies_to_a_real_store_recall(memory_store, monkeypatch):
    memory_store.store_many([{"content": f"Deployment note {i}: " + "the rollout plan " * 100,
                              "tags": ["deploy"]} for i in range(15)])
    raw = memory_store.recall("deployment rollout plan", limit=15)
    assert estimate_tokens(len(json.dumps(raw))) > 2000
    monkeypatch.setenv("AUTOMEM_RECALL_TOKEN_BUDGET", "2000")
    out = call_tool(lambda: memory_store, "recall_memory", {"query": "deployment rollout plan", "limit": 15})
    assert not out.is_error
    assert out.structured["results"][0]["memory_id"] == raw["results"][0]["id"]
    assert 1 <= len(out.structured["results"]) < len(raw["results"])
    assert out.structured["truncation"]["reason"] == "response_token_budget"
    assert "Response budget: showing" in out.texts[0]
    assert math.ceil(len(json.dumps(out.structured, ensure_ascii=False)) / 2.5) < 2000


# -- handlers without the SDK transport ---------------------------------------------------------------


@pytest.mark.parametrize("name", RANKED_ONLY_PARAMS)
def test_enumeration_rejects_every_ranked_only_parameter(memory_store, name):
    values = {"queries": ["q"], "embedding": [0.1], "exclude_tags": ["x"], "context_tags": ["x"],
              "context_types": ["Decision"], "priority_ids": [ID1], "expansion_limit": 3, "relation_limit": 3,
              "per_query_limit": 3, "expand_min_importance": 0.5, "expand_min_strength": 0.5, "min_score": 0.1,
              "state_mode": "history", "recency_bias": "on", "sort": "time_desc"}
    booleans = {"expand_relations", "expand_entities", "auto_decompose", "current_only", "state_debug",
                "scope_fallback", "expand_respect_tags", "adaptive_floor", "strict_time"}
    value = values.get(name, False if name in booleans else "x")
    out = call_tool(lambda: memory_store, "recall_memory", {"tags": ["t"], "exhaustive": True, name: value})
    assert out.is_error and name in out.texts[0] and "ranked-only" in out.texts[0]


def test_a_fetch_by_id_says_which_arguments_it_did_not_use(memory_store):
    """``memory_id`` fetches that one memory: a query or filter beside it is not applied, and the
    answer says so (defaults a client fills in, such as ``exhaustive: false``, are not named)."""
    memory_id = memory_store.store("the atlas runs postgres", tags=["atlas"])
    out = call_tool(lambda: memory_store, "recall_memory",
                    {"memory_id": memory_id, "query": "kafka", "tags": ["other"], "exhaustive": False, "offset": 0})
    assert not out.is_error and "the atlas runs postgres" in out.texts[0]
    [warning] = out.structured["warnings"]
    assert "query, tags" in warning and "exhaustive" not in warning and "offset" not in warning
    plain = call_tool(lambda: memory_store, "recall_memory", {"memory_id": memory_id, "format": "json"})
    assert not plain.is_error and "warnings" not in plain.structured

def test_handler_errors_are_results_not_exceptions(memory_store):
    def broken() -> Any:
        raise RuntimeError("disk on fire")

    out = call_tool(broken, "recall_memory", {"query": "x"})
    assert out.is_error and "disk on fire" in out.texts[0] and out.structured["error"] == "internal_error"
    out = call_tool(lambda: memory_store, "no_such_tool", {})
    assert out.is_error and "Unknown tool" in out.texts[0]
    out = call_tool(lambda: memory_store, "store_memory", {"content": "x", "importance": 3})
    assert out.is_error and "importance" in out.texts[0]
    health = call_tool(broken, "check_database_health", {})
    assert not health.is_error and health.structured["status"] == "error" and "disk on fire" in health.structured["error"]


def test_build_server_does_not_open_the_store_before_a_tool_call():
    import anyio
    from mcp import Client

    from localmem.mcp_server import build_server
    from localmem.store import MemoryStore

    opened: list[MemoryStore] = []

    def factory() -> MemoryStore:
        opened.append(MemoryStore(":memory:", embedder="hash"))
        return opened[-1]

    server = build_server(factory, warm_up=False)

    async def scenario() -> None:
        async with Client(server) as client:
            assert len((await client.list_tools()).tools) == 6
            assert opened == []
            result = await client.call_tool("check_database_health", {})
            assert result.structured_content["status"] == "healthy" and len(opened) == 1

    anyio.run(scenario)


def test_importing_the_package_does_not_import_torch():
    code = ("import sys, localmem.mcp_server, localmem.mcp_server.formatting, localmem.mcp_server.handlers; "
            "assert 'torch' not in sys.modules and 'mcp' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# -- end to end over stdio --------------------------------------------------------------------------------


class StdioServer:
    """One ``python -m localmem.mcp_server`` process and an SDK client, driven from a helper thread."""

    def __init__(self, db: Path) -> None:
        from mcp import Client, StdioServerParameters

        self.params = StdioServerParameters(
            command=sys.executable, args=["-m", "localmem.mcp_server", "--db", str(db), "--embedder", "hash"],
            cwd=str(REPO), env=dict(os.environ))  # the SDK's default environment would drop LOCALMEM_DAEMON=0
        self._client_cls = Client
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.client: Any = None
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._main(),), daemon=True)
        self.thread.start()
        if not self._ready.wait(30) or self._error is not None:
            raise RuntimeError(f"MCP server did not start: {self._error!r}")

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with self._client_cls(self.params, mode="legacy", read_timeout_seconds=30) as client:
                self.client = client
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:  # surfaced by __init__
            self._error = exc
            self._ready.set()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(60)

    def call(self, name: str, args: dict[str, Any] | None = None) -> Any:
        return self.run(self.client.call_tool(name, args or {}))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self.thread.join(15)


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory):
    server = StdioServer(tmp_path_factory.mktemp("mcp") / "memory.db")
    yield server
    server.close()


def store(mcp_server, content: str, **fields: Any) -> str:
    result = mcp_server.call("store_memory", {"content": content, **fields})
    assert not result.is_error, result.content[0].text
    return result.structured_content["memory_id"]


def test_e2e_lists_six_tools_with_schemas(mcp_server):
    assert mcp_server.client.server_info.name == "localmem"
    tools = {t.name: t for t in mcp_server.run(mcp_server.client.list_tools()).tools}
    assert tuple(tools) == TOOL_NAMES
    for tool in tools.values():
        assert tool.input_schema["type"] == "object" and tool.output_schema["type"] == "object"
    assert tools["store_memory"].input_schema["properties"]["memories"]["maxItems"] == 500
    assert tools["associate_memories"].input_schema["properties"]["associations"]["items"]["required"] == [
        "memory1_id", "memory2_id", "type", "strength"]
    assert tools["update_memory"].input_schema["required"] == ["memory_id"]
    recall = tools["recall_memory"]
    assert recall.annotations.read_only_hint is True and recall.annotations.idempotent_hint is True
    assert set(RANKED_ONLY_PARAMS) <= set(recall.input_schema["properties"])
    assert tools["delete_memory"].annotations.destructive_hint is True


def test_e2e_store_then_recall_round_trip(mcp_server):
    memory_id = store(mcp_server, "Chose PostgreSQL over MongoDB for the billing database. Need ACID.",
                      tags=["e2e-roundtrip", "database"], importance=0.9)
    result = mcp_server.call("recall_memory", {"query": "PostgreSQL billing database", "tags": ["e2e-roundtrip"]})
    assert not result.is_error
    assert result.structured_content["mode"] == "ranked"
    assert result.structured_content["results"][0]["memory_id"] == memory_id
    assert result.content[0].text.startswith("Found 1 memory")  # issue 35: the count in its number
    assert f"ID: {memory_id}" in result.content[0].text

    as_json = mcp_server.call("recall_memory", {"query": "PostgreSQL billing", "tags": ["e2e-roundtrip"],
                                                "format": "json"})
    first = as_json.structured_content["results"][0]
    assert first["importance"] == 0.9 and "score_components" in first and "t_valid" in first
    assert json.loads(as_json.content[0].text) == as_json.structured_content

    fetched = mcp_server.call("recall_memory", {"memory_id": memory_id, "query": "ignored", "offset": 9})
    assert fetched.structured_content["mode"] == "id_fetch"
    assert fetched.structured_content["results"][0]["content"].startswith("Chose PostgreSQL")


def test_e2e_recall_says_whether_learned_ranking_ran(mcp_server):
    store(mcp_server, "Learned ranking check: the garden party went well.", tags=["e2e-learned"])
    ranked = mcp_server.call("recall_memory", {"query": "garden party", "tags": ["e2e-learned"]})
    block = ranked.structured_content["learned_rank"]
    assert block["applied"] is False and "this store embeds with hash" in block["reason"]
    by_time = mcp_server.call("recall_memory", {"query": "garden party", "tags": ["e2e-learned"],
                                                "sort": "time_desc"})
    assert by_time.structured_content["learned_rank"]["reason"] == "results are sorted by time_desc"


def test_e2e_store_errors(mcp_server):
    big = mcp_server.call("store_memory", {"content": "x" * 2001})
    assert big.is_error and big.structured_content["error"] == "content_too_large"
    assert big.structured_content["content_length"] == 2001
    missing = mcp_server.call("store_memory", {"tags": ["a"]})
    assert missing.is_error and "`content` is required" in missing.content[0].text
    unknown = mcp_server.call("store_memory", {"content": "x", "colour": "red"})
    assert unknown.is_error and "colour" in unknown.content[0].text


def test_e2e_batch_store(mcp_server):
    result = mcp_server.call("store_memory", {"memories": [
        {"content": f"Batch memory {i}", "tags": ["e2e-batch"], "importance": 0.5} for i in range(3)]})
    assert not result.is_error and result.structured_content["stored"] == 3
    assert len(set(result.structured_content["memory_ids"])) == 3
    with_id = mcp_server.call("store_memory", {"memories": [{"content": "a", "id": ID1}]})
    assert with_id.is_error and "memories[0].id is not allowed" in with_id.content[0].text
    mixed = mcp_server.call("store_memory", {"memories": [{"content": "a"}], "tags": ["x"]})
    assert mixed.is_error and "top-level single-mode field(s): tags" in mixed.content[0].text
    too_big = mcp_server.call("store_memory", {"memories": [{"content": "ok"}, {"content": "y" * 2500}]})
    assert too_big.is_error and too_big.structured_content["error"] == "content_too_large"
    listed = mcp_server.call("recall_memory", {"tags": ["e2e-batch"], "exhaustive": True})
    assert listed.structured_content["count"] == 3  # the failed batches stored nothing


def test_e2e_supersede_via_store_memory(mcp_server):
    old_id = store(mcp_server, "The team deploys the e2e service on Fridays.", tags=["e2e-supersede"])
    result = mcp_server.call("store_memory", {
        "content": "The team deploys the e2e service on Tuesdays now.", "tags": ["e2e-supersede"],
        "supersedes_memory_id": old_id, "supersede_relation": "EVOLVED_INTO", "supersede_reason": "schedule change"})
    assert not result.is_error, result.content[0].text
    structured = result.structured_content
    new_id = structured["memory_id"]
    assert structured["superseded_memory_id"] == old_id and structured["association_created"] is True
    assert structured["relation_type"] == "EVOLVED_INTO"

    old = mcp_server.call("recall_memory", {"memory_id": old_id, "format": "json"}).structured_content["results"][0]
    assert old["t_invalid"]
    assert old["metadata"]["superseded_by"] == new_id and old["metadata"]["supersede_reason"] == "schedule change"
    current = mcp_server.call("recall_memory", {"query": "when does the team deploy the e2e service",
                                                "tags": ["e2e-supersede"]})
    ids = [r["memory_id"] for r in current.structured_content["results"]]
    assert new_id in ids and old_id not in ids
    history = mcp_server.call("recall_memory", {"query": "when does the team deploy the e2e service",
                                                "tags": ["e2e-supersede"], "state_mode": "history"})
    assert old_id in [r["memory_id"] for r in history.structured_content["results"]]

    gone = mcp_server.call("store_memory", {"content": "x", "supersedes_memory_id": ID1})
    assert gone.is_error and "superseded memory not found" in gone.content[0].text


def test_e2e_recall_modes_and_errors(mcp_server):
    missing = mcp_server.call("recall_memory", {"memory_id": ID1})
    assert missing.is_error and missing.content[0].text == f"Error: recall_memory: no memory with id {ID1}"
    bad_id = mcp_server.call("recall_memory", {"memory_id": "not-a-uuid"})
    assert bad_id.is_error
    offset = mcp_server.call("recall_memory", {"query": "anything", "offset": 5})
    assert offset.is_error and "raise `limit`" in offset.content[0].text
    no_tags = mcp_server.call("recall_memory", {"exhaustive": True})
    assert no_tags.is_error and "requires non-empty `tags`" in no_tags.content[0].text
    ranked_only = mcp_server.call("recall_memory", {"exhaustive": True, "tags": ["x"], "query": "q"})
    assert ranked_only.is_error and "ranked-only param(s): query" in ranked_only.content[0].text
    prefix = mcp_server.call("recall_memory", {"exhaustive": True, "tags": ["x"], "tag_match": "prefix"})
    assert prefix.is_error
    bad_format = mcp_server.call("recall_memory", {"query": "x", "format": "yaml"})
    assert bad_format.is_error and "format" in bad_format.content[0].text


def test_e2e_exhaustive_paging(mcp_server):
    contents = [f"Paging record number {i}" for i in range(7)]
    mcp_server.call("store_memory", {"memories": [
        {"content": c, "tags": ["E2E-Paging"], "importance": 0.1 * (i + 1)} for i, c in enumerate(contents)]})
    seen: list[str] = []
    offset, pages = 0, 0
    while True:
        page = mcp_server.call("recall_memory", {"tags": ["e2e-paging"], "exhaustive": True, "limit": 3,
                                                 "offset": offset, "format": "items"})
        assert not page.is_error
        structured = page.structured_content
        assert structured["mode"] == "enumeration" and structured["offset"] == offset and structured["limit"] == 3
        seen += [r["content"] for r in structured["results"]]
        pages += 1
        if not structured["has_more"]:
            assert "next_offset" not in structured
            break
        offset = structured["next_offset"]
    assert pages == 3 and seen == list(reversed(contents))  # importance desc


def test_e2e_associate(mcp_server):
    a = store(mcp_server, "Bug: login times out on slow networks.", tags=["e2e-assoc"])
    b = store(mcp_server, "Fix: retry login with exponential backoff.", tags=["e2e-assoc"])
    single = mcp_server.call("associate_memories", {"memory1_id": a, "memory2_id": b, "type": "LEADS_TO",
                                                    "strength": 0.9, "reason": "fix"})
    assert not single.is_error and single.structured_content["success"] is True
    assert single.structured_content["relation_type"] == "LEADS_TO"
    no_strength = mcp_server.call("associate_memories", {"memory1_id": a, "memory2_id": b, "type": "RELATES_TO"})
    assert no_strength.is_error and "strength is required" in no_strength.content[0].text
    batch = mcp_server.call("associate_memories", {"associations": [
        {"memory1_id": b, "memory2_id": a, "type": "RELATES_TO", "strength": 0.5},
        {"memory1_id": a, "memory2_id": ID1, "type": "RELATES_TO", "strength": 0.5}]})
    assert not batch.is_error
    structured = batch.structured_content
    assert structured["status"] == "partial_success" and structured["created_count"] == 1
    assert structured["failed"][0]["index"] == 1 and "do not exist" in structured["failed"][0]["reason"]
    detailed = mcp_server.call("recall_memory", {"query": "login timeout bug", "tags": ["e2e-assoc"],
                                                 "format": "detailed"})
    bug = next(r for r in detailed.structured_content["results"] if r["memory_id"] == a)
    assert {s["type"] for s in bug["relations"]} == {"LEADS_TO"}


def test_e2e_update_and_delete(mcp_server):
    memory_id = store(mcp_server, "Use tabs for indentation.", tags=["e2e-update"])
    updated = mcp_server.call("update_memory", {"memory_id": memory_id, "content": "Use four spaces.",
                                                "importance": 0.8})
    assert not updated.is_error and updated.structured_content["memory_id"] == memory_id
    assert updated.structured_content["updated_fields"] == ["content", "importance"]
    record = mcp_server.call("recall_memory", {"memory_id": memory_id}).structured_content["results"][0]
    assert record["content"] == "Use four spaces." and record["importance"] == 0.8
    assert mcp_server.call("update_memory", {"memory_id": ID1, "importance": 0.1}).is_error
    assert mcp_server.call("update_memory", {"memory_id": memory_id}).is_error

    deleted = mcp_server.call("delete_memory", {"memory_id": memory_id})
    assert not deleted.is_error and deleted.structured_content["memory_id"] == memory_id
    assert mcp_server.call("delete_memory", {"memory_id": memory_id}).is_error  # not found
    both = mcp_server.call("delete_memory", {"memory_id": memory_id, "tags": ["x"]})
    assert both.is_error and "not both" in both.content[0].text
    assert mcp_server.call("delete_memory", {}).is_error

    mcp_server.call("store_memory", {"memories": [{"content": f"Scratch {i}", "tags": ["E2E-Scratch"]}
                                                  for i in range(4)] + [{"content": "Keep", "tags": ["e2e-keep"]}]})
    bulk = mcp_server.call("delete_memory", {"tags": ["e2e-scratch"]})
    assert not bulk.is_error and bulk.structured_content["deleted_count"] == 4
    assert "removed 4 memories" in bulk.content[0].text
    left = mcp_server.call("recall_memory", {"tags": ["e2e-scratch", "e2e-keep"], "exhaustive": True})
    assert [r["content"] for r in left.structured_content["results"]] == ["Keep"]


def test_e2e_health(mcp_server):
    result = mcp_server.call("check_database_health")
    assert not result.is_error
    structured = result.structured_content
    assert structured["status"] == "healthy" and structured["backend"] == "localmem"
    assert structured["statistics"]["memory_count"] >= 1 and structured["statistics"]["indexes_agree"] is True
    assert "Status: healthy" in result.content[0].text


def test_e2e_unknown_tool_is_an_error_result(mcp_server):
    result = mcp_server.call("forget_everything", {})
    assert result.is_error and "Unknown tool" in result.content[0].text
