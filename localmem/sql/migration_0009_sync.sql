-- Schema version 9: what `localmem sync` needs to merge two stores.
--
-- A store gets a random identity (meta store_id), so a peer can keep what it has
-- already sent to it. Deletions leave tombstones and edge changes a log entry,
-- numbered by the same counter as memory changes (sync_clock), so a sync reads
-- what changed since its last run by an index range. sync_peers keeps, per peer,
-- the counter value up to which everything was sent; sync_base the version of
-- each memory both sides agreed on at the last sync (a memory changed on both
-- sides since then is a conflict, not an overwrite).

INSERT INTO meta (key, value) VALUES ('store_id', lower(hex(randomblob(16))))
ON CONFLICT (key) DO NOTHING;

CREATE TABLE sync_tombstones (
    id         TEXT PRIMARY KEY,
    deleted_at TEXT NOT NULL,
    seq        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sync_tombstones_seq ON sync_tombstones (seq);

CREATE TRIGGER sync_tombstone_on_delete AFTER DELETE ON memories
BEGIN
    UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
    -- Upserts, not INSERT OR REPLACE: a statement's own conflict clause would override the latter's.
    INSERT INTO sync_tombstones (id, deleted_at, seq)
    VALUES (old.id, strftime('%Y-%m-%dT%H:%M:%f', 'now') || '+00:00',
            (SELECT seq FROM sync_clock WHERE id = 1))
    ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at, seq = excluded.seq;
END;

-- A memory stored again under its id (a sync keeping an edit over a delete) is no longer deleted.
CREATE TRIGGER sync_tombstone_on_insert AFTER INSERT ON memories
BEGIN
    DELETE FROM sync_tombstones WHERE id = new.id;
END;

-- One row per edge ever written, by its ends' public ids: deleted_at NULL while it exists.
CREATE TABLE sync_edge_log (
    src_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    dst_id     TEXT NOT NULL,
    deleted_at TEXT,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (src_id, type, dst_id)
) WITHOUT ROWID;
CREATE INDEX sync_edge_log_seq ON sync_edge_log (seq);

INSERT INTO sync_edge_log (src_id, type, dst_id, deleted_at, seq)
SELECT a.id, e.type, b.id, NULL, (SELECT seq FROM sync_clock WHERE id = 1)
FROM edges AS e JOIN memories AS a ON a.pk = e.src JOIN memories AS b ON b.pk = e.dst;

CREATE TRIGGER sync_edge_on_insert AFTER INSERT ON edges
BEGIN
    UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
    INSERT INTO sync_edge_log (src_id, type, dst_id, deleted_at, seq)
    SELECT a.id, new.type, b.id, NULL, (SELECT seq FROM sync_clock WHERE id = 1)
    FROM memories AS a, memories AS b WHERE a.pk = new.src AND b.pk = new.dst
    ON CONFLICT (src_id, type, dst_id) DO UPDATE SET deleted_at = NULL, seq = excluded.seq;
END;

CREATE TRIGGER sync_edge_on_update AFTER UPDATE ON edges
BEGIN
    UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
    INSERT INTO sync_edge_log (src_id, type, dst_id, deleted_at, seq)
    SELECT a.id, new.type, b.id, NULL, (SELECT seq FROM sync_clock WHERE id = 1)
    FROM memories AS a, memories AS b WHERE a.pk = new.src AND b.pk = new.dst
    ON CONFLICT (src_id, type, dst_id) DO UPDATE SET deleted_at = NULL, seq = excluded.seq;
END;

-- An edge removed with one of its memories needs no tombstone: the memory's covers it.
CREATE TRIGGER sync_edge_on_delete AFTER DELETE ON edges
BEGIN
    UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
    UPDATE sync_edge_log
    SET deleted_at = strftime('%Y-%m-%dT%H:%M:%f', 'now') || '+00:00',
        seq = (SELECT seq FROM sync_clock WHERE id = 1)
    WHERE src_id = (SELECT id FROM memories WHERE pk = old.src)
      AND type = old.type
      AND dst_id = (SELECT id FROM memories WHERE pk = old.dst);
END;

CREATE TABLE sync_peers (
    peer      TEXT PRIMARY KEY,
    sent_seq  INTEGER NOT NULL DEFAULT 0,
    last_sync TEXT
) WITHOUT ROWID;

CREATE TABLE sync_base (
    peer    TEXT NOT NULL,
    id      TEXT NOT NULL,
    version TEXT NOT NULL,
    PRIMARY KEY (peer, id)
) WITHOUT ROWID;

-- What a sync wrote here from a peer, at the change number the write got: not sent back
-- to that peer unless changed again (kind m: a memory, d: a deletion, e: an edge).
CREATE TABLE sync_echo (
    peer TEXT NOT NULL,
    kind TEXT NOT NULL,
    key  TEXT NOT NULL,
    seq  INTEGER NOT NULL,
    PRIMARY KEY (peer, kind, key)
) WITHOUT ROWID;
