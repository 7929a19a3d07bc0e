-- Schema version 6: change tracking and the id map of `localmem push`.
--
-- Every write that changes a memory (not only its last_accessed) gives it the
-- next value of one counter, so a push finds what changed since it last sent
-- a memory by an index range, not by comparing every row. The id map keeps,
-- per remote server, the id the server gave each pushed memory; a mapped
-- memory that no longer exists locally is a deletion to propagate, a mapped
-- edge that no longer exists an edge deletion.

CREATE TABLE sync_clock (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL
);
INSERT INTO sync_clock (id, seq) SELECT 1, count(*) FROM memories;

CREATE TABLE memory_changes (
    pk  INTEGER PRIMARY KEY REFERENCES memories (pk) ON DELETE CASCADE,
    seq INTEGER NOT NULL
);
CREATE INDEX memory_changes_seq ON memory_changes (seq);
INSERT INTO memory_changes (pk, seq)
SELECT pk, row_number() OVER (ORDER BY pk) FROM memories;

CREATE TRIGGER memory_changes_insert AFTER INSERT ON memories
BEGIN
    UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
    INSERT OR REPLACE INTO memory_changes (pk, seq)
    VALUES (new.pk, (SELECT seq FROM sync_clock WHERE id = 1));
END;

-- recall's last_accessed write (and the derived thread key) is not a change.
CREATE TRIGGER memory_changes_update AFTER UPDATE ON memories
WHEN new.content IS NOT old.content OR new.summary IS NOT old.summary
  OR new.type IS NOT old.type OR new.confidence IS NOT old.confidence
  OR new.importance IS NOT old.importance OR new.tags IS NOT old.tags
  OR new.timestamp IS NOT old.timestamp OR new.updated_at IS NOT old.updated_at
  OR new.t_valid IS NOT old.t_valid OR new.t_invalid IS NOT old.t_invalid
  OR new.archived IS NOT old.archived OR new.metadata IS NOT old.metadata
  OR new.context IS NOT old.context OR new.relevance_score IS NOT old.relevance_score
BEGIN
    UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
    INSERT OR REPLACE INTO memory_changes (pk, seq)
    VALUES (new.pk, (SELECT seq FROM sync_clock WHERE id = 1));
END;

-- One row per server pushed to; `remote` is its normalised base URL.
CREATE TABLE push_remotes (
    remote     TEXT PRIMARY KEY,
    kind       TEXT,
    first_push TEXT NOT NULL,
    last_push  TEXT
) WITHOUT ROWID;

-- remote_id NULL: the memory was sent and the answer is not recorded yet (a
-- push stopped there checks the server for it before sending it again).
-- pushed_seq: the memory_changes.seq of the version the server has (0: send
-- it again); fields: a hash per field of what the server was sent.
CREATE TABLE push_ids (
    remote     TEXT NOT NULL REFERENCES push_remotes (remote) ON DELETE CASCADE,
    local_id   TEXT NOT NULL,
    remote_id  TEXT,
    pushed_seq INTEGER NOT NULL DEFAULT 0,
    fields     TEXT NOT NULL DEFAULT '{}',
    sent_at    TEXT,
    PRIMARY KEY (remote, local_id)
) WITHOUT ROWID;
CREATE UNIQUE INDEX push_ids_remote_id ON push_ids (remote, remote_id) WHERE remote_id IS NOT NULL;

-- The edges a remote has, by local memory ids, with what it was sent.
CREATE TABLE push_edges (
    remote     TEXT NOT NULL REFERENCES push_remotes (remote) ON DELETE CASCADE,
    src_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    dst_id     TEXT NOT NULL,
    strength   REAL NOT NULL,
    properties TEXT NOT NULL,
    PRIMARY KEY (remote, src_id, type, dst_id)
) WITHOUT ROWID;

-- `localmem reembed`: the new vectors, staged batch by batch while recall keeps
-- answering from the old ones, then swapped in at once. `digest` is a hash of
-- the content embedded, so a memory changed meanwhile is embedded again.
CREATE TABLE reembed_staging (
    pk        INTEGER PRIMARY KEY,
    embedding BLOB NOT NULL,
    digest    BLOB NOT NULL
);
