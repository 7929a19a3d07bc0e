-- Schema version 1: memories, tags and tag prefixes, edges, embeddings, meta.
-- The vec0 index is created separately (vector_index_create.sql) once the
-- embedding dimension is known.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT
) WITHOUT ROWID;

-- pk is the integer key shared by every derived index (FTS5 rowid, vec0 pk,
-- tag and edge rows); id is the public UUID.
CREATE TABLE memories (
    pk              INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    content         TEXT NOT NULL,
    summary         TEXT,
    type            TEXT NOT NULL,
    confidence      REAL NOT NULL,
    importance      REAL NOT NULL,
    tags            TEXT NOT NULL DEFAULT '[]',   -- JSON list, as given
    timestamp       TEXT NOT NULL,                -- UTC ISO 8601: sorts as text
    updated_at      TEXT NOT NULL,
    last_accessed   TEXT NOT NULL,
    t_valid         TEXT,
    t_invalid       TEXT,
    archived        INTEGER NOT NULL DEFAULT 0,
    metadata        TEXT NOT NULL DEFAULT '{}',   -- JSON object
    context         TEXT NOT NULL DEFAULT 'default',
    relevance_score REAL
);
CREATE INDEX memories_importance ON memories (importance DESC, timestamp DESC);
CREATE INDEX memories_timestamp ON memories (timestamp);
CREATE INDEX memories_context ON memories (context);

-- Lowercased whole tags (exact filters) and their segment prefixes
-- (prefix filters), so both are index lookups.
CREATE TABLE memory_tags (
    tag TEXT NOT NULL,
    pk  INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
    PRIMARY KEY (tag, pk)
) WITHOUT ROWID;
CREATE INDEX memory_tags_pk ON memory_tags (pk);

CREATE TABLE memory_tag_prefixes (
    prefix TEXT NOT NULL,
    pk     INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
    PRIMARY KEY (prefix, pk)
) WITHOUT ROWID;
CREATE INDEX memory_tag_prefixes_pk ON memory_tag_prefixes (pk);

-- Directed, typed relationship edges, indexed from both ends.
CREATE TABLE edges (
    src        INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
    dst        INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
    type       TEXT NOT NULL,
    strength   REAL NOT NULL DEFAULT 0.5,
    updated_at TEXT NOT NULL,
    properties TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (src, type, dst)
) WITHOUT ROWID;
CREATE INDEX edges_dst ON edges (dst, type, src);

-- Canonical float32 copy of every embedding: cheap point lookups for
-- scoring keyword hits and for rebuilding the vec0 index.
CREATE TABLE memory_embeddings (
    pk        INTEGER PRIMARY KEY REFERENCES memories (pk) ON DELETE CASCADE,
    embedding BLOB NOT NULL
);
