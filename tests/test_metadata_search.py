"""Metadata sidecar matching (automem-behaviour.md §1.5)."""

from __future__ import annotations

import json

import pytest

from localmem.metadata_search import (
    FIELD_ALIASES,
    FIELD_TOKENS,
    METADATA_SEARCH_FIELDS,
    QUERY_STOPWORDS,
    SKIPPED_FIELDS,
    field_is_requested,
    has_strong_evidence,
    metadata_match_score,
    metadata_scan_limit,
    metadata_slot_count,
    metadata_values,
    normalize_text,
    prefilter_terms,
    query_value_terms,
    requested_fields,
)


def test_constants() -> None:
    assert METADATA_SEARCH_FIELDS == (
        "source", "source_agent", "source_agents", "repo", "project", "tool", "surface",
        "applies_to", "trigger", "provider", "model", "entities")
    assert not SKIPPED_FIELDS & set(METADATA_SEARCH_FIELDS)
    assert set(FIELD_ALIASES) == set(METADATA_SEARCH_FIELDS)
    assert len(QUERY_STOPWORDS) == 19 and "memories" in QUERY_STOPWORDS
    assert {"metadata", "agent", "applies"} <= FIELD_TOKENS


# --- normalisation and query analysis ---------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Café—Déjà vu!  API_v2", "cafe deja vu api v2"),
        ("verygoodplugins/mcp-automem", "verygoodplugins mcp automem"),
        ("  ...  ", ""),
        ("ﬁle №5", "file no5"),  # NFKD compatibility forms
        ("Claude’s straße, 東京tokyo", "claude s strae tokyo"),  # letters drop, punctuation splits
        (42, "42"),
    ],
)
def test_normalize_text(text: object, expected: str) -> None:
    assert normalize_text(text) == expected


def test_query_value_terms() -> None:
    terms, fields = query_value_terms(
        "Show me memories from the source agent Codex about MCP-AutoMem, codex")
    # show/me/memories/from/the/about: stopwords; source/agent: field words; dupes dropped
    assert terms == ["codex", "mcp", "automem"]
    assert fields == {"source_agent", "source_agents"}
    assert query_value_terms("go to db") == ([], set())  # value terms need ≥ 3 chars


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("repo automem", {"repo"}),
        ("which repository?", {"repo"}),
        ("what applies to python", {"applies_to"}),
        ("rules that apply to go", {"applies_to"}),
        ("source of truth", {"source"}),
        ("Source-Agents: codex", {"source_agent", "source_agents"}),  # not also "source"
        ("entity list", {"entities"}),
        ("model and provider", {"model", "provider"}),
        ("sources of modelling", set()),  # words, not substrings
        ("", set()),
    ],
)
def test_requested_fields(query: str, expected: set[str]) -> None:
    assert requested_fields(query) == expected


def test_prefilter_terms_are_the_first_twelve_value_terms() -> None:
    words = [f"term{i:02d}" for i in range(14)]
    query = "show repo " + " ".join(words) + " ab"
    assert prefilter_terms(query) == words[:12]
    assert prefilter_terms("the memories") == []


def test_limits() -> None:
    assert [metadata_scan_limit(n) for n in (1, 5, 20, 100)] == [200, 200, 500, 1000]
    assert [metadata_slot_count(n) for n in (0, 1, 5, 50)] == [1, 1, 5, 10]


# --- metadata_values ---------------------------------------------------------


def test_metadata_values_whitelist_and_shapes() -> None:
    metadata = {
        "notes": "not whitelisted",
        "original_content": "never",
        "tool": "  Claude Code  ",
        "model": 4,
        "provider": True,                       # booleans are not values
        "surface": "x" * 97,                    # longer than 96 chars
        "project": ["alpha", ["beta", 7], {"k": "dict in list"}, ""],
        "trigger": [str(i) for i in range(13)],  # more than 12 items
        "repo": {"name": "dicts are skipped"},
        "source": "y" * 96,
    }
    assert metadata_values(metadata, set()) == [
        ("source", "y" * 96),
        ("project", "alpha"), ("project", "beta"), ("project", "7"),
        ("tool", "Claude Code"),
        ("model", "4"),
    ]


def test_entities_only_when_named_and_never_people() -> None:
    metadata = {"entities": {"Tools": ["Postgres", "Redis"], "people": ["Alice"],
                             "projects": "localmem", "nested": {"a": "b"}, "": ["x"]}}
    assert metadata_values(metadata, set()) == []
    assert metadata_values(metadata, {"repo"}) == []
    assert metadata_values(metadata, {"entities"}) == [
        ("entities.tools", "Postgres"), ("entities.tools", "Redis"),
        ("entities.projects", "localmem"),
    ]
    assert metadata_values({"entities": ["flat"]}, {"entities"}) == []


def test_field_is_requested() -> None:
    assert field_is_requested("tool", set())
    assert field_is_requested("source_agents", {"source_agent"})
    assert field_is_requested("entities.tools", {"entities"})
    assert not field_is_requested("source", {"source_agent"})
    assert not field_is_requested("tool", {"repo"})


# --- strong evidence ---------------------------------------------------------


@pytest.mark.parametrize(
    ("hits", "value_tokens", "query_count", "exact", "explicit", "expected"),
    [
        ({"claude", "code"}, {"claude", "code"}, 9, False, False, True),  # 2 hits, multi-token
        (set(), {"x"}, 1, True, True, False),
        ({"mcp"}, {"mcp"}, 5, True, True, True),          # explicit + exact + ≥3
        ({"mcp"}, {"mcp", "bridge"}, 2, False, True, False),  # short hit, not exact
        ({"automem"}, {"automem", "bridge"}, 9, False, True, True),  # ≥5 + explicit
        ({"claude"}, {"claude"}, 3, True, False, True),   # ≥5, exact, ≤3 query terms
        ({"claude"}, {"claude"}, 4, True, False, False),  # too many query terms
        ({"claude"}, {"claude", "code"}, 2, False, False, False),  # not exact
        ({"mcp"}, {"mcp"}, 1, True, False, False),        # short and no field named
    ],
)
def test_has_strong_evidence(hits: set[str], value_tokens: set[str], query_count: int,
                             exact: bool, explicit: bool, expected: bool) -> None:
    assert has_strong_evidence(hits=hits, value_tokens=value_tokens, query_value_count=query_count,
                               exact=exact, explicit_field=explicit) is expected


# --- metadata_match_score ----------------------------------------------------


def test_score_two_hits_exact_no_field_named() -> None:
    # value terms: deploy, notes, claude, code (4); value "claude code": tokens {claude, code};
    # hits 2, exact. 0.15 + 0.45·2/2 + 0.20·2/4 + 0.15 = 0.85
    assert metadata_match_score("deploy notes for Claude Code", {"tool": "Claude Code"}) == \
        pytest.approx(0.85)


def test_score_other_field_named_is_discounted() -> None:
    # fields {provider}; value terms claude, code, deploy (3); tool not named but 2 hits.
    # (0.15 + 0.45·1 + 0.20·2/3 + 0.15) · 0.6 = 0.8833… · 0.6 = 0.53
    assert metadata_match_score("provider claude code deploy", {"tool": "Claude Code"}) == \
        pytest.approx(0.53)


def test_score_saturates_at_one() -> None:
    # 0.15 + 0.45 + 0.20 + 0.15 (exact) + 0.20 (field named) = 1.15 → 1.0
    assert metadata_match_score("memories from source agent codex", {"source_agent": "codex"}) == 1.0
    assert metadata_match_score("source agent codex", {"source_agents": ["claude", "codex"]}) == 1.0


def test_score_single_long_hit_with_named_field() -> None:
    # value terms automem, server (2); value "automem bridge" (2 tokens), 1 hit, not exact.
    # 0.15 + 0.45·1/2 + 0.20·1/2 + 0 + 0.20 = 0.675
    assert metadata_match_score("tool automem server", {"tool": "automem bridge"}) == \
        pytest.approx(0.675)
    # a 3-letter hit needs the exact value when the field is named
    assert metadata_match_score("tool mcp server", {"tool": "mcp bridge"}) == 0.0


def test_score_single_exact_hit_without_field() -> None:
    # value terms notes, claude (2): 0.15 + 0.45 + 0.20·1/2 + 0.15 = 0.85
    assert metadata_match_score("notes about claude", {"tool": "claude"}) == pytest.approx(0.85)
    # more than three value terms: no longer strong
    assert metadata_match_score("claude notes deploy friday", {"tool": "claude"}) == 0.0
    # short hit without a named field: never strong
    assert metadata_match_score("mcp notes", {"tool": "mcp"}) == 0.0


def test_exact_value_must_sit_on_word_boundaries() -> None:
    # "claude code" is a substring of "claude codex" but not a whole-word phrase in it,
    # so only the single hit "claude" remains, without exactness: not strong.
    assert metadata_match_score("claude codex release", {"tool": "claude code"}) == 0.0


def test_repo_rule() -> None:
    meta = {"repo": "verygoodplugins/mcp-automem"}
    # every repo query term covered: 0.15 + 0.45·2/3 + 0.20·2/2 + 0.20 = 0.85
    assert metadata_match_score("repo verygoodplugins automem", meta) == pytest.approx(0.85)
    # "server" is not covered and the value is not exact → rejected
    assert metadata_match_score("repo verygoodplugins automem server", meta) == 0.0
    # exact value in the query lifts the coverage rule: 0.15 + 0.45 + 0.20·3/4 + 0.15 + 0.20 → 1.0
    assert metadata_match_score("repo verygoodplugins/mcp-automem server", meta) == 1.0
    # repo field not named: no coverage rule; 0.15 + 0.45·2/3 + 0.20·2/3 = 0.58333…
    assert metadata_match_score("verygoodplugins automem server", meta) == pytest.approx(0.15 + 0.3 + 0.4 / 3)


def test_unnamed_field_needs_two_hits_when_fields_are_named() -> None:
    assert metadata_match_score("provider anthropic notes", {"tool": "anthropic"}) == 0.0
    both = {"provider": "anthropic", "tool": "anthropic"}
    # provider named, exact: 0.15 + 0.45 + 0.20·1/2 + 0.15 + 0.20 = 1.05 → 1.0
    assert metadata_match_score("provider anthropic notes", both) == 1.0
    # "source agent" names source_agent(s), not source
    assert metadata_match_score("source agent codex", {"source": "codex"}) == 0.0


def test_best_value_wins() -> None:
    meta = {"project": ["claude", "claude code"]}
    # "claude": 1 hit, exact, 3 value terms → 0.15 + 0.45 + 0.20/3 + 0.15 = 0.8167
    # "claude code": 2 hits, exact → 0.15 + 0.45 + 0.40/3 + 0.15 = 0.8833 (wins)
    assert metadata_match_score("claude code tips", meta) == pytest.approx(0.75 + 0.4 / 3)


def test_entities_need_the_entities_field_named() -> None:
    meta = {"entities": {"tools": ["Postgres"], "people": ["Caroline"]}}
    assert metadata_match_score("postgres tuning", meta) == 0.0
    # named: 0.15 + 0.45 + 0.20·1/2 + 0.15 + 0.20 = 1.05 → 1.0
    assert metadata_match_score("entity postgres tuning", meta) == 1.0
    assert metadata_match_score("entity caroline", meta) == 0.0  # people never searched


def test_non_ascii_values_are_folded() -> None:
    # hits {cafe, societa}, exact; 3 value terms: 0.15 + 0.45 + 0.20·2/3 + 0.15 = 0.8833…
    assert metadata_match_score("cafe societa roadmap", {"project": "Café Società"}) == \
        pytest.approx(0.75 + 0.4 / 3)


def test_degenerate_inputs() -> None:
    assert metadata_match_score("", {"tool": "claude"}) == 0.0
    assert metadata_match_score("the memories", {"tool": "the memories"}) == 0.0
    assert metadata_match_score("claude code", {}) == 0.0
    assert metadata_match_score("claude code", None) == 0.0
    assert metadata_match_score("claude code", {"notes": "claude code"}) == 0.0  # not whitelisted
    assert metadata_match_score("claude code", "not json") == 0.0
    assert metadata_match_score("claude code", json.dumps({"tool": "Claude Code"})) == \
        pytest.approx(0.15 + 0.45 + 0.20 + 0.15)


def test_common_metadata_terms_find_the_same_candidates_by_importance_walk(memory_store_factory, monkeypatch):
    import localmem.recall.channels as channels

    store = memory_store_factory(embedder="none")
    store.store_many([{"content": f"note {i}", "importance": (i % 10) / 10,
                       "metadata": {"project": "apollo" if i % 3 else "gemini", "source": "slack"}}
                      for i in range(120)])

    def sidecar() -> list[tuple[str, float]]:
        answer = store.recall("apollo slack", limit=10, adaptive_floor=False)
        return [(r["id"], r["final_score"]) for r in answer["results"] if r["match_type"] == "metadata"]

    collected = sidecar()
    monkeypatch.setattr(channels, "COMMON_METADATA_ROWS", 1)  # every term counts as common
    walked = sidecar()
    assert collected and walked == collected


def test_the_count_of_a_metadata_term_is_kept_until_the_file_changes(memory_store_factory, monkeypatch):
    import localmem.recall.channels as channels

    monkeypatch.setattr(channels, "COMMON_METADATA_ROWS", 3)
    store = memory_store_factory(embedder="none")
    store.store_many([{"content": f"note {i}", "metadata": {"project": "hermes"}} for i in range(2)])

    def recall_statements() -> list[str]:
        statements: list[str] = []
        store.conn.set_profile(lambda sql, _ns: statements.append(sql))
        store.recall("hermes", limit=5)
        store.conn.set_profile(None)
        return statements

    def counts(statements: list[str]) -> int:
        return sum("count(*) FROM (SELECT 1 FROM memory_metadata_terms" in s for s in statements)

    def walks(statements: list[str]) -> bool:  # the plan for common terms
        return any("INDEXED BY memories_importance" in s for s in statements)

    first = recall_statements()
    assert counts(first) == 1 and not walks(first)
    again = recall_statements()
    assert counts(again) == 0 and not walks(again)  # the count was kept
    store.store("one more", metadata={"project": "hermes"})
    after = recall_statements()
    assert counts(after) == 1 and walks(after)  # three memories now: counted again, and common


def test_value_terms_no_memory_has_look_for_no_candidates(memory_store_factory):
    store = memory_store_factory(embedder="none")
    store.store("note", metadata={"project": "hermes"})
    statements: list[str] = []
    store.conn.set_profile(lambda sql, _ns: statements.append(sql))
    store.recall("athena", limit=5)
    store.conn.set_profile(None)
    assert any("count(*) FROM (SELECT 1 FROM memory_metadata_terms" in s for s in statements)
    assert not any("Metadata sidecar candidates" in s for s in statements)
