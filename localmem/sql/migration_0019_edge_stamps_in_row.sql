-- Schema version 19: an edge carries its own change number and stamp (issue 44, item 4).
--
-- Since schema 9 every edge write also wrote a row of sync_edge_log, keyed by the two memories'
-- text ids and indexed by change number, from a trigger: a second b-tree row, its index entry
-- and their pages in every commit, which made an associate() cost 1.8 times the previous
-- release's. Now the edge row holds its own seq and hlc, written by the same INSERT/upsert that
-- writes the edge (edge_upsert.sql steps the clock first), and one index on seq lets a sync read
-- what changed since a change number. A removed edge leaves a row in sync_edge_tombstones
-- (keyed by the memories' text ids, as the log was: a deleted memory's edges keep their ids),
-- written by the delete trigger. A tombstone whose edge exists again is stale: every read takes
-- the edge (sync_edge_changes, sync_edge_states), so re-adding an edge needs no extra write.
--
-- Writers that insert or update edges without stamping them (an import, any bare INSERT) are
-- stamped by the triggers below, which run only for a row left unstamped.

DROP TRIGGER IF EXISTS sync_edge_on_insert;
DROP TRIGGER IF EXISTS sync_edge_on_update;
DROP TRIGGER IF EXISTS sync_edge_on_delete;

CREATE TABLE IF NOT EXISTS sync_edge_tombstones (
    src_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    dst_id     TEXT NOT NULL,
    deleted_at TEXT,            -- NULL: removed with its memory before schema 15 logged that
    seq        INTEGER NOT NULL,
    hlc        TEXT,
    PRIMARY KEY (src_id, type, dst_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sync_edge_tombstones_seq ON sync_edge_tombstones (seq);

-- The log's rows move to where they now live: an existing edge's into its row, the others into
-- tombstones, each with the change number and stamp it had (so what a peer was sent stays sent,
-- and what it was not is still ahead of its mark). Run only while the old log is there.
CREATE TABLE IF NOT EXISTS sync_edge_log (
    src_id TEXT NOT NULL, type TEXT NOT NULL, dst_id TEXT NOT NULL, deleted_at TEXT,
    seq INTEGER NOT NULL, hlc TEXT, PRIMARY KEY (src_id, type, dst_id)) WITHOUT ROWID;

UPDATE edges SET seq = l.seq, hlc = l.hlc
FROM sync_edge_log AS l, memories AS a, memories AS b
WHERE a.pk = edges.src AND b.pk = edges.dst
  AND l.src_id = a.id AND l.type = edges.type AND l.dst_id = b.id;

INSERT INTO sync_edge_tombstones (src_id, type, dst_id, deleted_at, seq, hlc)
SELECT l.src_id, l.type, l.dst_id, l.deleted_at, l.seq, l.hlc
FROM sync_edge_log AS l
WHERE NOT EXISTS (SELECT 1 FROM memories AS a JOIN edges AS e ON e.src = a.pk
                  JOIN memories AS b ON b.pk = e.dst
                  WHERE a.id = l.src_id AND e.type = l.type AND b.id = l.dst_id)
ON CONFLICT (src_id, type, dst_id) DO NOTHING;

DROP TABLE sync_edge_log;

-- An edge the log never held (none is expected) gets a change number of its own now (a page
-- of changes ends at a number, so numbers are not shared), and a sync sends it once.
UPDATE edges SET seq = c.seq + r.n
FROM (SELECT src, type, dst, row_number() OVER (ORDER BY src, type, dst) AS n FROM edges WHERE seq IS NULL) AS r,
     sync_clock AS c
WHERE c.id = 1 AND edges.src = r.src AND edges.type = r.type AND edges.dst = r.dst;
UPDATE sync_clock SET seq = max(seq, coalesce((SELECT max(seq) FROM edges), 0)) WHERE id = 1;

CREATE INDEX IF NOT EXISTS edges_seq ON edges (seq);

-- The clock's step, as in every other change trigger (migration 0015).
CREATE TRIGGER sync_edge_on_insert AFTER INSERT ON edges
WHEN new.seq IS NULL
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    UPDATE edges SET seq = c.seq,
        hlc = printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM sync_clock AS c
    WHERE c.id = 1 AND edges.src = new.src AND edges.type = new.type AND edges.dst = new.dst;
END;

-- An update that did not restamp the row (its seq and stamp unchanged) is stamped here.
CREATE TRIGGER sync_edge_on_update AFTER UPDATE ON edges
WHEN new.seq IS old.seq AND new.hlc IS old.hlc
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    UPDATE edges SET seq = c.seq,
        hlc = printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM sync_clock AS c
    WHERE c.id = 1 AND edges.src = new.src AND edges.type = new.type AND edges.dst = new.dst;
END;

-- A removal is logged while both memories exist (a memory's deletion removes its edges first:
-- sync_tombstone_on_delete), by their ids.
CREATE TRIGGER sync_edge_on_delete AFTER DELETE ON edges
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    INSERT INTO sync_edge_tombstones (src_id, type, dst_id, deleted_at, seq, hlc)
    SELECT a.id, old.type, b.id, strftime('%Y-%m-%dT%H:%M:%f', 'now') || '+00:00', c.seq,
           printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM memories AS a, memories AS b, sync_clock AS c WHERE a.pk = old.src AND b.pk = old.dst AND c.id = 1
    ON CONFLICT (src_id, type, dst_id) DO UPDATE SET deleted_at = excluded.deleted_at, seq = excluded.seq,
        hlc = excluded.hlc;
END;
