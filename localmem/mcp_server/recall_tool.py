"""The ``recall_memory`` tool's declaration: description, input and output schemas (see
``tools.py`` for the other five)."""

from __future__ import annotations

from .schema_parts import STRING_LIST, UNIT

RANKED_ONLY_PARAMS = (
    "query", "queries", "embedding", "time_query", "start", "end", "exclude_tags",
    "expand_relations", "expand_entities", "auto_decompose", "expansion_limit",
    "relation_limit", "expand_min_importance", "expand_min_strength", "current_only",
    "state_debug", "state_mode", "recency_bias", "scope_fallback", "expand_respect_tags",
    "min_score", "adaptive_floor", "sort", "context", "language", "active_path",
    "context_tags", "context_types", "priority_ids", "per_query_limit", "strict_time",
)
RECALL_FORMATS = ("text", "items", "detailed", "json")

RECALL_MEMORY = {
    "name": "recall_memory",
    "title": "Recall Memory",
    "description": """Recall memories in one of three modes. The mode is selected by which params you pass.

**Mode 1 — ID fetch:** pass `memory_id` to retrieve a single memory by ID, in full (never truncated; includes t_valid, t_invalid and archived). All other params are ignored. An unknown ID returns an empty result.

**Mode 2 — Tag enumeration:** pass `tags` + `exhaustive: true` for paginated exact-match listing (NOT ranked retrieval), ordered by importance then recency. Use this for cleanup/audit workflows where ranked retrieval undercounts large tag sets. Pair with `limit` (≤200, default 20) and `offset`; follow `next_offset` while `has_more` is true. Tag matching is exact, case-insensitive, any-of — `tag_match: "prefix"`, `tag_mode: "all"` and every ranked-only parameter are rejected in this mode.

**Mode 3 — Ranked retrieval (default):** hybrid search across vector, keyword, tags, recency, and optional graph expansion. The primary tool for finding relevant context. By default only current memories are returned (superseded/expired ones are replaced or suppressed); set `state_mode: "history"` (or `current_only: false`) for audits. `offset` > 0 is rejected here — raise `limit` instead.

Responses are budgeted (default ~18k tokens, `AUTOMEM_RECALL_TOKEN_BUDGET`): text/items/detailed show 400-character content previews; trailing results are dropped when the budget is exceeded (`truncation` says how many). Fetch a full record with `memory_id`.

**Examples:**
- recall_memory({ query: "database architecture decisions", tags: ["my-project"], limit: 5 })
- recall_memory({ memory_id: "abc123" })  // Mode 1
- recall_memory({ tags: ["benchmark-test"], exhaustive: true, limit: 50 })  // Mode 2 (add offset for later pages)
- recall_memory({ query: "auth", exclude_tags: ["deprecated"] })  // Mode 3 with exclusion
- recall_memory({ query: "What is Sarah's sister's job?", expand_entities: true })  // Mode 3 multi-hop""",
    "annotations": {
        "title": "Recall Memory", "readOnlyHint": True, "destructiveHint": False,
        "idempotentHint": True, "openWorldHint": False,
    },
    "always_load": True,
    "inputSchema": {
        "type": "object",
        "properties": {
            "memory_id": {"type": "string", "description": "MODE: ID fetch. When set, fetches the single memory "
                                                           "by ID and IGNORES all other params."},
            "exhaustive": {"type": "boolean", "description": "MODE: tag enumeration. When true, requires non-empty "
                                                             "`tags`; paginated exact-match listing, NOT ranked "
                                                             "retrieval. `limit` ≤ 200."},
            "query": {"type": "string", "description": "Semantic search query (natural language). Describe what "
                                                       "you're looking for. `*` means no query."},
            "queries": {**STRING_LIST, "description": "Multiple queries for broader recall. Results are deduplicated. At most 10 queries, 10,000 characters in all."},
            "embedding": {"type": "array", "items": {"type": "number"},
                          "description": "Optional embedding vector for direct similarity search"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200,
                      "description": "Max memories to return. Ranked mode: default 5, capped at 100 "
                                     "(RECALL_MAX_LIMIT). Enumeration mode: default 20, at most 200."},
            "tags": {**STRING_LIST, "description": "Filter by tags. Use project name as first tag for scoping."},
            "exclude_tags": {**STRING_LIST, "description": "Ranked-mode only. Tags to exclude from results (any "
                                                            "match excludes; independent of tag_match)."},
            "tag_mode": {"type": "string", "enum": ["any", "all"],
                         "description": '"any" matches memories with any tag (default), "all" requires all tags'},
            "tag_match": {"type": "string", "enum": ["exact", "prefix"],
                          "description": '"prefix" for starts-with matching (ranked default), "exact" for exact '
                                         "tag match (the only choice in enumeration mode)"},
            "time_query": {"type": "string", "description": 'Natural language time filter: "today", "yesterday", '
                                                            '"last week", "last 2 weeks", "since monday", '
                                                            '"3 days ago", "march 2025", "2026-11-27", '
                                                            '"between 2026-11-01 and 2026-11-27". The window '
                                                            "applied is in time_window; an expression that is "
                                                            "not understood adds a warning."},
            "strict_time": {"type": "boolean", "default": False,
                            "description": "Ranked-mode only. Refuse a time_query that is not understood "
                                           "(an error) instead of answering without a window and a warning."},
            "start": {"type": "string", "description": "ISO timestamp lower bound (alternative to time_query)"},
            "end": {"type": "string", "description": "ISO timestamp upper bound"},
            "expand_entities": {"type": "boolean", "description": "Enable multi-hop reasoning via entity expansion. "
                                                                  "Finds memories about people/places mentioned in "
                                                                  "seed results."},
            "expand_relations": {"type": "boolean", "description": "Follow graph relationships from seed results "
                                                                   "to find related memories."},
            "expand_respect_tags": {"type": "boolean", "description": "Ranked-mode only. When true, graph expansion "
                                                                      "stays within the requested tag scope."},
            "auto_decompose": {"type": "boolean", "description": "Auto-extract entities and topics from query to "
                                                                 "generate supplementary searches."},
            "expansion_limit": {"type": "integer", "minimum": 1, "maximum": 500,
                                "description": "Max total expanded memories (default: 25)"},
            "relation_limit": {"type": "integer", "minimum": 1, "maximum": 200,
                               "description": "Max relations to follow per seed memory (default: 5)"},
            "expand_min_importance": {**UNIT, "description": "Minimum importance for expanded results (seed "
                                                              "results are never filtered)."},
            "expand_min_strength": {**UNIT, "description": "Minimum relation strength to follow during graph "
                                                            "expansion."},
            "current_only": {"type": "boolean", "default": True,
                             "description": "Ranked-mode only. Legacy lifecycle flag; when true, superseded, "
                                            "expired, not-yet-valid and archived memories are suppressed. Wins "
                                            "over state_mode when both are given."},
            "state_debug": {"type": "boolean", "default": False,
                            "description": "Ranked-mode only. Include suppression/replacement IDs and reasons in "
                                           "state_filter."},
            "state_mode": {"type": "string", "enum": ["current", "history"],
                           "description": "Ranked-mode only. `current` (default) returns active memories; "
                                          "`history` includes superseded/invalidated ones for audit timelines."},
            "recency_bias": {"type": "string", "enum": ["auto", "on", "off"],
                             "description": "Ranked-mode only. Relative-recency re-rank: auto (when the query asks "
                                            "for recent things), on, or off."},
            "scope_fallback": {"type": "boolean", "description": "Ranked-mode only. Fill short tag-scoped results "
                                                                 "from an unscoped vector search (marked "
                                                                 "outside_tag_scope)."},
            "min_score": {**UNIT, "description": "Ranked-mode only. Minimum final score for returned results."},
            "adaptive_floor": {"type": "boolean", "description": "Ranked-mode only. Adaptive score floor that drops "
                                                                 "weak matches (default on)."},
            "context": {"type": "string", "description": 'Context label (e.g., "coding-style", "architecture"). '
                                                         "Boosts matching preferences."},
            "language": {"type": "string", "description": 'Programming language hint (e.g., "python", '
                                                          '"typescript"). Prioritizes language-specific memories.'},
            "active_path": {"type": "string", "description": "Current file path for language auto-detection "
                                                             '(e.g., "src/auth.ts")'},
            "context_tags": {**STRING_LIST, "description": "Priority tags to boost in results"},
            "context_types": {**STRING_LIST, "description": 'Priority memory types to boost (e.g., ["Style", '
                                                             '"Preference"])'},
            "priority_ids": {**STRING_LIST, "description": "Memory IDs to boost and fetch when the search missed "
                                                            "them (filters still apply)"},
            "per_query_limit": {"type": "integer", "minimum": 1, "maximum": 50,
                                "description": "Per-query result limit when using queries[] (default: limit)"},
            "sort": {"type": "string", "enum": ["score", "time_desc", "time_asc", "updated_desc", "updated_asc"],
                     "description": "Result ordering (use time_* for chronological recaps)"},
            "format": {"type": "string", "enum": list(RECALL_FORMATS), "default": "text",
                       "description": "Output format: text (default), items (one block per memory), detailed "
                                      "(adds type/confidence/metadata keys/relation stubs), json (raw per-memory "
                                      "fields incl. full content/metadata/relations; the whole-response token "
                                      "budget still applies). text/items/detailed show a 400-char content preview."},
            "offset": {"type": "integer", "minimum": 0,
                       "description": "Enumeration mode only (exhaustive: true): records to skip when paging. "
                                      "Ranked recall rejects offset > 0 — raise limit instead."},
        },
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "description": "Number of memories found (before any budget trimming)"},
            "mode": {"type": "string", "enum": ["ranked", "enumeration", "id_fetch"],
                     "description": "Mode that produced the result."},
            "has_more": {"type": "boolean", "description": "Enumeration mode only: true if more records exist "
                                                           "past this page."},
            "limit": {"type": "integer", "description": "Enumeration mode only: page size of this request."},
            "offset": {"type": "integer", "description": "Enumeration mode only: offset used for this response."},
            "next_offset": {"type": "integer", "description": "Enumeration mode only, when has_more: the offset "
                                                              "of the next page."},
            "results": {
                "type": "array",
                "description": "Array of matching memories with scores",
                "items": {
                    "type": "object",
                    "properties": {
                        "memory_id": {"type": "string"},
                        "summary": {"type": "string", "description": "Stored one-sentence summary (additive; "
                                                                     "does not replace content)."},
                        "content": {"type": "string", "description": "Memory content (preview-capped in "
                                                                     "budgeted formats)."},
                        "content_truncated": {"type": "boolean"},
                        "content_chars": {"type": "integer"},
                        "tags": STRING_LIST,
                        "importance": {"type": "number"},
                        "final_score": {"type": "number"},
                        "match_type": {"type": "string"},
                        "created_at": {"type": "string"},
                        "updated_at": {"type": "string"},
                        "t_valid": {"type": "string"},
                        "t_invalid": {"type": "string"},
                        "archived": {"type": "boolean"},
                        "deduped_from": STRING_LIST,
                        "outside_tag_scope": {"type": "boolean"},
                        "state_replaces": {"type": "string"},
                        "metadata_keys": STRING_LIST,
                        "relations_total": {"type": "integer"},
                    },
                    "required": ["memory_id"],
                },
            },
            "truncation": {"type": "object", "description": "Present when the response budget dropped results: "
                                                            "{ applied, omitted_results, reason }."},
            "dedup_removed": {"type": "integer"},
            "query": {"type": "string"},
            "sort": {"type": "string"},
            "exclude_tags": STRING_LIST,
            "state_filter": {"type": "object"},
            "state_mode": {"type": "string", "enum": ["current", "history"]},
            "tag_scope": {"type": "object"},
            "scope_fallback": {"type": "boolean"},
            "recency_bias": {"type": "string", "enum": ["auto", "on", "off"]},
            "score_filter": {"type": "object"},
            "queries": STRING_LIST,
            "vector_search": {"type": "object"},
            "learned_rank": {"type": "object", "description": "Whether the learned re-ranking ran: "
                                                              "{ applied, candidates, dates_in_query?, thread_spread? } or { applied: false, reason }; "
                                                              "dates_in_query: calendar dates the query names, a ranking hint (ignored: why one was not read); "
                                                              "thread_spread.moved: memories of one thread moved down so a gathering question's first ten span threads."},
            "query_time_ms": {"type": "number"},
            "degraded": {"type": "boolean"},
            "degraded_reason": {"type": "string"},
            "time_window": {"type": "object", "description": "The time window applied: { start, end, "
                                                             "expression, timezone } (null bounds are open)."},
            "warnings": {**STRING_LIST, "description": "What the answer could not honour, e.g. a "
                                                        "time_query that was not understood."},
        },
        "required": ["count", "results"],
    },
}
