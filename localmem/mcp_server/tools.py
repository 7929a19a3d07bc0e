"""The six MCP tools: names, descriptions, JSON input/output schemas, annotations.

Shaped as AutoMem's MCP client (``mcp-automem`` 0.15.0) declares them, so an
assistant prompted for AutoMem finds the same tools and arguments. Plain data
(no SDK import): ``server.py`` turns each entry into an ``mcp`` ``Tool``.
"""

from __future__ import annotations

from typing import Any

from ..classify import MEMORY_TYPES
from ..relations import AUTHORABLE_TYPES, SUPERSESSION_TYPES
from .recall_tool import RECALL_MEMORY
from .schema_parts import STRING_LIST as _STRING_LIST
from .schema_parts import UNIT as _UNIT

BATCH_MAX_ITEMS = 500
CONTENT_SOFT_LIMIT = 500
CONTENT_HARD_LIMIT = 2000
ENUMERATION_MAX_LIMIT = 200

RELATION_DESCRIPTIONS = {
    "RELATES_TO": "General relationship",
    "LEADS_TO": "Causal relationship (bug → solution)",
    "OCCURRED_BEFORE": "Temporal sequence",
    "PREFERS_OVER": "User/team preference (props: context, reason)",
    "EXEMPLIFIES": "Concrete example of a pattern (props: pattern_type, confidence)",
    "CONTRADICTS": "Conflicting information (props: resolution, reason)",
    "REINFORCES": "Strengthens validity (props: observations)",
    "INVALIDATED_BY": "memory1 is superseded by newer information in memory2; recall then hides memory1 "
                      "(props: reason, timestamp)",
    "EVOLVED_INTO": "Knowledge progression: memory1 evolved into memory2; recall then hides memory1 "
                    "(props: confidence, reason)",
    "DERIVED_FROM": "Derived or implementation relationship (props: transformation, confidence)",
    "PART_OF": "Hierarchical membership (props: role, context)",
}


# -- store_memory -------------------------------------------------------------

STORE_SINGLE_FIELDS = (
    "content", "tags", "importance", "embedding", "metadata", "timestamp", "type",
    "confidence", "id", "t_valid", "t_invalid", "updated_at", "last_accessed",
    "supersedes_memory_id", "supersede_relation", "supersede_reason",
)
BATCH_ITEM_FIELDS = ("content", "tags", "importance", "timestamp", "type", "confidence", "metadata")
BATCH_DISALLOWED_FIELDS = ("id", "embedding", "t_valid", "t_invalid")

STORE_MEMORY = {
    "name": "store_memory",
    "title": "Store Memory",
    "description": f"""Store memory in one of two modes — single-memory (set top-level `content`) or batch (set `memories: [...]` for up to {BATCH_MAX_ITEMS}).

**Mode 1 — Single (default):** pass top-level `content` plus any optional fields (tags, importance, metadata, type, confidence, embedding, t_valid, t_invalid, etc.).

**Mode 1b — Supersede/correct:** pass top-level `content` plus `supersedes_memory_id`. In one transaction the new memory is stored, the old one is marked invalid (`t_invalid=now`, supersede metadata merged into its metadata), and old → new is linked with `INVALIDATED_BY` (default) or `EVOLVED_INTO`. Ranked recall then returns the replacement instead of the old memory.

**Mode 2 — Batch:** pass `memories: [{{ content, tags?, importance?, metadata?, timestamp?, type?, confidence? }}, ...]` to store up to {BATCH_MAX_ITEMS} memories in one call (all or nothing). Batch mode does NOT accept `id`, `embedding`, `t_valid` or `t_invalid` per item — use single mode for those.

**Dedup (on by default):** content that is already a current memory with the same context and tags (ignoring case, spacing and a final '.' or '!') is not stored again — you get its ID with `deduped: true`. Near-duplicates are stored and listed in `similar_existing`. Pass `dedup: false` to store a copy anyway.

**Content size guidelines (per item):**
- Target: 150-300 characters (one meaningful paragraph)
- Recommended maximum: {CONTENT_SOFT_LIMIT} characters
- Hard limit: {CONTENT_HARD_LIMIT} characters (rejected)
- Format: "Brief title. Context and details. Impact/outcome."

**When to use:**
- After making a decision: store the reasoning and outcome
- When discovering a pattern: store the pattern and where it applies
- After fixing a bug: store the root cause and solution
- When learning user preferences: store what they prefer and why
- For bulk ingestion (imports, seeding): use batch mode

**Examples:**
- store_memory({{ content: "Chose PostgreSQL over MongoDB for user service. Need ACID for transactions.", tags: ["architecture", "database"], importance: 0.9 }})
- store_memory({{ content: "User prefers early returns over nested conditionals.", tags: ["code-style"], importance: 0.7 }})
- store_memory({{ content: "User now prefers SQLite for small local tools.", supersedes_memory_id: "old-id", supersede_reason: "Correction from user" }})""",
    "annotations": {
        "title": "Store Memory", "readOnlyHint": False, "destructiveHint": False,
        "idempotentHint": False, "openWorldHint": False,
    },
    "always_load": True,
    "inputSchema": {
        "type": "object",
        "properties": {
            "content": {
                "type": "string",
                "description": "Single-memory mode (XOR with `memories`). The memory content to store. "
                               "Be specific: include context, reasoning, and outcome.",
            },
            "memories": {
                "type": "array",
                "minItems": 1,
                "maxItems": BATCH_MAX_ITEMS,
                "description": f"Batch mode (XOR with `content`). Up to {BATCH_MAX_ITEMS} memory objects to store "
                               "in one call. Each item supports content (required), tags, importance, timestamp, "
                               "type, confidence, metadata. No `id`, `embedding`, `t_valid` or `t_invalid` per item.",
                "items": {
                    "type": "object",
                    "required": ["content"],
                    "properties": {
                        "content": {"type": "string"},
                        "tags": _STRING_LIST,
                        "importance": _UNIT,
                        "timestamp": {"type": "string"},
                        "type": {"type": "string", "enum": list(MEMORY_TYPES)},
                        "confidence": _UNIT,
                        "metadata": {"type": "object"},
                    },
                },
            },
            "tags": {**_STRING_LIST, "description": 'Single-memory mode. Tags to categorize the memory '
                                                    '(e.g., ["project-name", "bug-fix", "auth"])'},
            "importance": {**_UNIT, "description": "Single-memory mode. Importance: 0.9+ critical decisions, "
                                                   "0.7-0.9 patterns/bugs, 0.5-0.7 minor notes (default 0.5)"},
            "embedding": {
                "type": "array", "items": {"type": "number"},
                "description": "Single-memory mode only. Optional embedding vector (computed locally if omitted); "
                               "its length must match the store's dimension.",
            },
            "metadata": {"type": "object", "description": "Single-memory mode. Optional structured metadata "
                                                          '(e.g., { files_modified: ["auth.ts"], error_type: "timeout" })'},
            "timestamp": {"type": "string", "description": "Single-memory mode. Optional ISO timestamp (defaults to now)"},
            "type": {"type": "string", "enum": list(MEMORY_TYPES),
                     "description": "Single-memory mode. Memory type (classified from the content when omitted)"},
            "confidence": {**_UNIT, "description": "Single-memory mode. Classification confidence "
                                                   "(0-1, default 0.9 when type provided)"},
            "id": {"type": "string", "description": "Single-memory mode only. Custom memory ID (a UUID that is not "
                                                    "in use yet; generated if omitted)"},
            "t_valid": {"type": "string", "description": "Single-memory mode only. ISO 8601 timestamp when the "
                                                         "memory becomes valid"},
            "t_invalid": {"type": "string", "description": "Single-memory mode only. ISO 8601 timestamp when the "
                                                           "memory expires"},
            "updated_at": {"type": "string", "description": "Single-memory mode. ISO 8601 last-updated timestamp"},
            "last_accessed": {"type": "string", "description": "Single-memory mode. ISO 8601 last-accessed timestamp"},
            "dedup": {
                "type": "boolean", "default": True,
                "description": "Both modes (default true). Content that matches a current memory of the same "
                               "context and tag set (case, Unicode form, spacing and a trailing '.'/'!' "
                               "ignored) is not stored again: its ID comes back with `deduped: true`. "
                               "Near-duplicates are stored and listed in `similar_existing`. false: store "
                               "unchecked. Supersede mode always stores.",
            },
            "redact": {
                "type": "boolean", "default": True,
                "description": "Both modes (default true). Credentials (API keys, tokens, private keys, "
                               "passwords in URLs, KEY=value secrets) become `[redacted: <kind>]` and "
                               "`<private>…</private>` regions are dropped before anything is written; "
                               "`metadata.redacted` counts them. false: store the text as given.",
            },
            "supersedes_memory_id": {
                "type": "string",
                "description": "Single-memory supersede mode. Existing memory ID that this new memory replaces or corrects.",
            },
            "supersede_relation": {
                "type": "string", "enum": list(SUPERSESSION_TYPES), "default": "INVALIDATED_BY",
                "description": "Single-memory supersede mode. Relationship to create from old memory to new memory.",
            },
            "supersede_reason": {
                "type": "string",
                "description": "Single-memory supersede mode. Optional reason stored on the old memory's metadata "
                               "and on the relationship.",
            },
        },
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "memory_id": {"type": "string", "description": "Single-mode result: unique ID of the stored memory "
                                                           "(use for associations)"},
            "memory_ids": {"type": "array", "items": {"type": "string"},
                           "description": "Batch-mode result: IDs of the stored memories."},
            "superseded_memory_id": {"type": "string",
                                     "description": "Supersede-mode result: ID of the old memory marked invalid."},
            "association_created": {"type": "boolean",
                                    "description": "Supersede-mode result: whether old → new association was created."},
            "relation_type": {"type": "string", "description": "Supersede-mode result: the old → new relation."},
            "stored": {"type": "integer", "description": "Batch-mode result: number of memories stored."},
            "deduped": {"type": "boolean", "description": "Single-mode result: true when the content was already "
                                                        "stored; `memory_id` is the existing memory, unchanged."},
            "not_applied": {**_STRING_LIST, "description": "Deduped result: fields given that the existing "
                                                           "memory does not have (use update_memory)."},
            "similar_existing": {
                "type": "array", "description": "Single-mode result: current memories of the same context this "
                                                "content is close to (cosine, at most 3), still stored.",
                "items": {"type": "object", "properties": {"id": {"type": "string"}, "score": {"type": "number"}}},
            },
            "deduped_count": {"type": "integer", "description": "Batch-mode result: items not stored again."},
            "items": {
                "type": "array", "description": "Batch-mode result with dedup: per item, its `id`, `deduped`, "
                                                "`similar_existing` (and `not_applied`).",
                "items": {"type": "object"},
            },
            "type": {"type": "string", "description": "Single-mode result: the stored memory type."},
            "confidence": {"type": "number", "description": "Single-mode result: the type confidence."},
            "content_length": {"type": "integer"},
            "size_warning": {"type": "boolean"},
            "warnings": {**_STRING_LIST, "description": "How tag input was read when it was split or changed "
                                                        "(commas, semicolons and spaces separate tags; a "
                                                        "leading '#' is dropped)."},
            "message": {"type": "string", "description": "Confirmation message"},
        },
        "required": ["message"],
    },
}

# recall_memory: recall_tool.py

# -- associate_memories -----------------------------------------------------------

ASSOCIATION_PROPERTY_SCHEMAS: dict[str, Any] = {
    "context": {"type": "string", "description": "Relation-specific context for PREFERS_OVER or PART_OF."},
    "reason": {"type": "string", "description": "Relation-specific reason for PREFERS_OVER, CONTRADICTS, "
                                                "INVALIDATED_BY, or EVOLVED_INTO."},
    "pattern_type": {"type": "string", "description": "Relation-specific pattern label for EXEMPLIFIES."},
    "confidence": {**_UNIT, "description": "Relation-specific confidence for EXEMPLIFIES, EVOLVED_INTO, "
                                           "or DERIVED_FROM."},
    "resolution": {"type": "string", "description": "Relation-specific resolution for CONTRADICTS."},
    "observations": {**_STRING_LIST, "description": "Relation-specific observations for REINFORCES."},
    "timestamp": {"type": "string", "description": "Relation-specific timestamp for INVALIDATED_BY."},
    "transformation": {"type": "string", "description": "Relation-specific transformation note for DERIVED_FROM."},
    "role": {"type": "string", "description": "Relation-specific role for PART_OF."},
}
ASSOCIATION_FIELDS = ("memory1_id", "memory2_id", "type", "strength", *ASSOCIATION_PROPERTY_SCHEMAS)

_ASSOCIATION_CORE = {
    "memory1_id": {"type": "string", "description": "ID of the source memory (from store_memory or recall results)"},
    "memory2_id": {"type": "string", "description": "ID of the target memory to link to"},
    "type": {"type": "string", "enum": list(AUTHORABLE_TYPES), "description": "Relationship type "
                                                                              "(memory1 -[type]-> memory2)"},
    "strength": {**_UNIT, "description": "Relationship strength: 0.9+ direct causation, 0.7-0.9 strong relation, "
                                         "0.5-0.7 moderate"},
}

ASSOCIATE_MEMORIES = {
    "name": "associate_memories",
    "title": "Associate Memories",
    "description": f"""Create typed relationships between memories. This builds a knowledge graph that improves recall by surfacing related context. Supports single-pair mode or batch mode with associations[] (max {BATCH_MAX_ITEMS}). Re-linking the same pair with the same type updates the relationship (the answer says so, with the previous strength). With `remove: true` it deletes the relationship memory1 -[type]-> memory2 instead (every type between them when `type` is omitted; no `strength`).

**When to use:**
- After storing a new memory: link it to related existing memories
- When a bug fix relates to an original feature implementation
- When a new decision updates or invalidates a previous one
- To connect patterns with their concrete examples

**Authorable relationship types:**
{chr(10).join(f"- {name}: {text}" for name, text in RELATION_DESCRIPTIONS.items())}

**Read-only/internal relations:** SIMILAR_TO, PRECEDED_BY and DISCOVERED may appear in recall results but are not valid inputs here.

**Examples:**
- associate_memories({{ memory1_id: "bug-fix-123", memory2_id: "feature-456", type: "RELATES_TO", strength: 0.9 }})
- associate_memories({{ memory1_id: "old-decision", memory2_id: "new-decision", type: "EVOLVED_INTO", strength: 0.8 }})
- associate_memories({{ memory1_id: "old-decision", memory2_id: "new-decision", type: "EVOLVED_INTO", remove: true }})  // undo it
- associate_memories({{ associations: [{{ memory1_id: "a", memory2_id: "b", type: "RELATES_TO", strength: 0.8 }}] }})""",
    "annotations": {
        # destructive: `remove: true` deletes relationships.
        "title": "Associate Memories", "readOnlyHint": False, "destructiveHint": True,
        "idempotentHint": True, "openWorldHint": False,
    },
    "always_load": True,
    "inputSchema": {
        "type": "object",
        "properties": {
            **_ASSOCIATION_CORE,
            **ASSOCIATION_PROPERTY_SCHEMAS,
            "remove": {"type": "boolean", "description": "Single-pair mode: remove the relationship memory1 "
                                                         "-[type]-> memory2 instead of creating it (every "
                                                         "type from memory1 to memory2 when `type` is "
                                                         "omitted). Takes no `strength` or properties."},
            "associations": {
                "type": "array",
                "minItems": 1,
                "maxItems": BATCH_MAX_ITEMS,
                "description": f"Batch mode. Up to {BATCH_MAX_ITEMS} associations. Do not combine with top-level "
                               "memory1_id/memory2_id/type/strength.",
                "items": {
                    "type": "object",
                    "properties": {**_ASSOCIATION_CORE, **ASSOCIATION_PROPERTY_SCHEMAS},
                    "required": ["memory1_id", "memory2_id", "type", "strength"],
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "success": {"type": "boolean", "description": "Whether every requested association was created."},
            "message": {"type": "string", "description": "Confirmation message"},
            "relation_type": {"type": "string"},
            "strength": {"type": "number"},
            "status": {"type": "string"},
            "created_count": {"type": "integer"},
            "failed_count": {"type": "integer"},
            "succeeded": {"type": "array", "items": {"type": "object"}},
            "failed": {"type": "array", "items": {"type": "object"}},
            "summary": {"type": "string"},
            "updated": {"type": "boolean", "description": "The pair already had this relationship; it "
                                                          "was updated, from previous_strength."},
            "previous_strength": {"type": "number"},
            "removed": {"type": "integer", "description": "With remove: true, how many relationships "
                                                          "were removed."},
            "removed_types": _STRING_LIST,
            "warnings": _STRING_LIST,
        },
        "required": ["success", "message"],
    },
}

# -- update_memory -------------------------------------------------------------------

UPDATE_FIELDS = ("content", "tags", "importance", "metadata", "timestamp", "t_valid", "t_invalid",
                 "updated_at", "last_accessed", "type", "confidence")

UPDATE_MEMORY = {
    "name": "update_memory",
    "title": "Update Memory",
    "description": """Update an existing memory's content, tags, importance, metadata or timestamps. Use this to correct or enhance memories rather than storing duplicates. Changing the content re-embeds the memory; `metadata` replaces the whole metadata object; `t_invalid: null` clears an expiry.

**Examples:**
- update_memory({ memory_id: "abc123", importance: 0.95 })  // Increase importance
- update_memory({ memory_id: "abc123", tags: ["project-x", "critical", "auth"] })  // Replace tags
- update_memory({ memory_id: "abc123", content: "Updated: PostgreSQL chosen for ACID + team expertise" })""",
    "annotations": {
        "title": "Update Memory", "readOnlyHint": False, "destructiveHint": False,
        "idempotentHint": True, "openWorldHint": False,
    },
    "always_load": False,
    "inputSchema": {
        "type": "object",
        "properties": {
            "memory_id": {"type": "string", "description": "ID of the memory to update (from store_memory or "
                                                           "recall results)"},
            "content": {"type": "string", "description": "New content (replaces existing)"},
            "tags": {**_STRING_LIST, "description": "New tags (replaces existing)"},
            "importance": {**_UNIT, "description": "New importance score"},
            "metadata": {"type": "object", "description": "New metadata (replaces the existing object)"},
            "timestamp": {"type": "string", "description": "Override creation timestamp"},
            "t_valid": {"type": "string", "description": "ISO 8601 timestamp when the memory becomes valid"},
            "t_invalid": {"type": ["string", "null"], "description": "ISO 8601 timestamp when the memory expires "
                                                                    "or was superseded; null clears it"},
            "updated_at": {"type": "string", "description": "Explicit update timestamp (default: now)"},
            "last_accessed": {"type": "string", "description": "Last access timestamp"},
            "type": {"type": "string", "enum": list(MEMORY_TYPES), "description": "Memory type classification"},
            "confidence": {**_UNIT, "description": "Confidence score for the memory type"},
            "redact": {"type": "boolean", "default": True,
                       "description": "true (default): credentials in the content, tags and metadata given become "
                                      "`[redacted: <kind>]` (a tag holding one is dropped) and <private> regions "
                                      "go, as for store_memory. false: store them as given."},
        },
        "required": ["memory_id"],
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "memory_id": {"type": "string", "description": "ID of the updated memory"},
            "updated_fields": _STRING_LIST,
            "warnings": {**_STRING_LIST, "description": "How tag input was read when it was split or changed "
                                                        "(commas, semicolons and spaces separate tags; a "
                                                        "leading '#' is dropped)."},
            "message": {"type": "string", "description": "Confirmation message"},
        },
        "required": ["memory_id", "message"],
    },
}

# -- delete_memory -------------------------------------------------------------------

DELETE_MEMORY = {
    "name": "delete_memory",
    "title": "Delete Memory",
    "description": """Delete a memory by ID (`memory_id`) or bulk-delete by tag (`tags`). Use sparingly — consider `update_memory` instead.

**Mode 1 — Single (default):** pass `memory_id` to delete one memory with its relationships and embedding.

**Mode 2 — Bulk-by-tag:** pass `tags: [...]` to delete ALL memories tagged with ANY of these tags. Tag matching is exact (case-insensitive), any-of. There is NO dry-run — check with `recall_memory({ tags, exhaustive: true })` first if uncertain.

**Examples:**
- delete_memory({ memory_id: "abc123" })  // Mode 1
- delete_memory({ tags: ["benchmark-test"] })  // Mode 2, bulk by tag""",
    "annotations": {
        "title": "Delete Memory", "readOnlyHint": False, "destructiveHint": True,
        "idempotentHint": False, "openWorldHint": False,
    },
    "always_load": False,
    "inputSchema": {
        "type": "object",
        "properties": {
            "memory_id": {"type": "string", "description": "Single-delete mode (XOR with `tags`). ID of the memory "
                                                           "to delete."},
            "tags": {**_STRING_LIST, "description": "Bulk-delete mode (XOR with `memory_id`). Deletes ALL memories "
                                                    "tagged with ANY of these tags. Exact match, case-insensitive. "
                                                    "No dry-run."},
        },
        "additionalProperties": False,
    },
    "outputSchema": {
        "type": "object",
        "properties": {
            "memory_id": {"type": "string", "description": "Single-delete result: ID of the deleted memory."},
            "deleted_count": {"type": "integer", "description": "Bulk-delete result: number of memories deleted."},
            "tags": {**_STRING_LIST, "description": "Bulk-delete result: tags used for the bulk delete."},
            "warnings": {**_STRING_LIST, "description": "How tag input was read when it was split or changed "
                                                        "(commas, semicolons and spaces separate tags; a "
                                                        "leading '#' is dropped)."},
            "message": {"type": "string", "description": "Confirmation message"},
        },
        "required": ["message"],
    },
}

# -- check_database_health -------------------------------------------------------------

CHECK_DATABASE_HEALTH = {
    "name": "check_database_health",
    "title": "Check Database Health",
    "description": """Check the health of the local memory database (one SQLite file): memory, vector, full-text and relationship counts, whether the indexes agree, and whether the embedding model is available.

**When to use:**
- Before a session to verify the memory store is available
- When memory operations are failing unexpectedly
- To check storage statistics

**Example:**
- check_database_health({})""",
    "annotations": {
        "title": "Check Database Health", "readOnlyHint": True, "destructiveHint": False,
        "idempotentHint": True, "openWorldHint": False,
    },
    "always_load": False,
    "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
    "outputSchema": {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["healthy", "degraded", "error"],
                       "description": "Overall health. degraded: the store answers but an index or the "
                                      "embedding model needs attention."},
            "backend": {"type": "string", "description": "Backend type (localmem)"},
            "statistics": {"type": "object", "description": "Counts, embedder, schema version, file facts."},
            "error": {"type": "string", "description": "Error message if status is error"},
        },
        "required": ["status", "backend"],
    },
}

TOOLS: tuple[dict[str, Any], ...] = (
    STORE_MEMORY, RECALL_MEMORY, ASSOCIATE_MEMORIES, UPDATE_MEMORY, DELETE_MEMORY, CHECK_DATABASE_HEALTH,
)
TOOL_NAMES: tuple[str, ...] = tuple(t["name"] for t in TOOLS)
TOOLS_BY_NAME: dict[str, dict[str, Any]] = {t["name"]: t for t in TOOLS}

INSTRUCTIONS = (
    "localmem is the assistant's persistent long-term memory (one local SQLite file, hybrid vector + keyword "
    "+ graph recall). Use recall_memory to retrieve context (session start, before decisions, when debugging), "
    "store_memory to persist decisions, patterns, preferences and fixes, and associate_memories to link related "
    "memories. update_memory edits a memory in place, delete_memory removes one memory by ID or bulk-deletes by "
    "tag, and check_database_health reports store statistics."
)
