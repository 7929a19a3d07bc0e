-- Schema version 15: hybrid logical clocks (issue 42, item 1), and edges that travel with
-- their memories (item 3).
--
-- Every memory change, tombstone and edge-log entry carries a stamp
-- 'WWWWWWWWWWWWWWW-CCCCCCCCCC-REPLICA': the wall time in ms (15 digits), a logical counter
-- (10 digits) and the store identity of the replica that made the change, so stamps order as
-- text in the order (wall, counter, replica). The clock (sync_clock.hlc_wall, hlc_counter) moves
-- in the same UPDATE that already moves the change counter, reading the wall time from
-- localmem_wall_ms() (the store's clock; storage/hybrid_clock.py): the later of its wall and
-- now, with the counter reset when now is later, else the counter plus one. A sync that copies
-- a change pins the change's own stamp and advances the clock past it (the max rule), except
-- past a wall time more than the bounded skew ahead of this machine's (replication/hlc.py).
--
-- Stamps of what existed before are derived from what it has (updated_at, deleted_at), with
-- counter 0 and the all-zero replica, so the same version gets the same stamp on every store;
-- a time past the migration's own clock plus the skew (a 9999 updated_at) orders nothing (0).

UPDATE sync_clock SET hlc_wall = max(hlc_wall, localmem_wall_ms())
WHERE id = 1;

UPDATE memory_changes SET hlc = (
    SELECT printf('%015d-%010d-%s', CASE WHEN w IS NULL OR w < 0 OR w > c.hlc_wall + 86400000 THEN 0 ELSE w END,
                  0, '00000000000000000000000000000000')
    FROM (SELECT CAST(round(unixepoch(m.updated_at, 'subsec') * 1000) AS INTEGER) AS w
          FROM memories AS m WHERE m.pk = memory_changes.pk), sync_clock AS c WHERE c.id = 1);

UPDATE sync_tombstones SET
    hlc = (SELECT printf('%015d-%010d-%s', CASE WHEN w IS NULL OR w < 0 OR w > c.hlc_wall + 86400000 THEN 0 ELSE w END,
                         0, '00000000000000000000000000000000')
           FROM (SELECT CAST(round(unixepoch(deleted_at, 'subsec') * 1000) AS INTEGER) AS w), sync_clock AS c
           WHERE c.id = 1),
    deleted_hlc = (SELECT CASE WHEN deleted_updated_at IS NULL THEN NULL ELSE
                       printf('%015d-%010d-%s', CASE WHEN w IS NULL OR w < 0 OR w > c.hlc_wall + 86400000 THEN 0 ELSE w END,
                              0, '00000000000000000000000000000000') END
                   FROM (SELECT CAST(round(unixepoch(deleted_updated_at, 'subsec') * 1000) AS INTEGER) AS w),
                        sync_clock AS c WHERE c.id = 1);

UPDATE sync_edge_log SET hlc = (
    SELECT printf('%015d-%010d-%s', CASE WHEN w IS NULL OR w < 0 OR w > c.hlc_wall + 86400000 THEN 0 ELSE w END,
                  0, '00000000000000000000000000000000')
    FROM (SELECT CAST(round(unixepoch(coalesce(sync_edge_log.deleted_at,
                 (SELECT e.updated_at FROM edges AS e JOIN memories AS a ON a.pk = e.src
                  JOIN memories AS b ON b.pk = e.dst
                  WHERE a.id = sync_edge_log.src_id AND e.type = sync_edge_log.type
                    AND b.id = sync_edge_log.dst_id)), 'subsec') * 1000) AS INTEGER) AS w),
         sync_clock AS c WHERE c.id = 1);

-- The clock's step, in every trigger below: one UPDATE with the change counter's.
DROP TRIGGER IF EXISTS memory_changes_insert;
CREATE TRIGGER memory_changes_insert AFTER INSERT ON memories
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    INSERT OR REPLACE INTO memory_changes (pk, seq, hlc)
    SELECT new.pk, seq, printf('%015d-%010d-%s', hlc_wall, hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM sync_clock WHERE id = 1;
END;

DROP TRIGGER IF EXISTS memory_changes_update;
CREATE TRIGGER memory_changes_update AFTER UPDATE ON memories
WHEN new.content IS NOT old.content OR new.summary IS NOT old.summary
  OR new.type IS NOT old.type OR new.confidence IS NOT old.confidence
  OR new.importance IS NOT old.importance OR new.tags IS NOT old.tags
  OR new.timestamp IS NOT old.timestamp OR new.updated_at IS NOT old.updated_at
  OR new.t_valid IS NOT old.t_valid OR new.t_invalid IS NOT old.t_invalid
  OR new.archived IS NOT old.archived OR new.metadata IS NOT old.metadata
  OR new.context IS NOT old.context OR new.relevance_score IS NOT old.relevance_score
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    INSERT OR REPLACE INTO memory_changes (pk, seq, hlc)
    SELECT new.pk, seq, printf('%015d-%010d-%s', hlc_wall, hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM sync_clock WHERE id = 1;
END;

-- A deletion is stamped before the row goes, so it can name the stamp of the version it
-- deleted (memory_changes' row goes with the memory) and log its edges' removal: the edges are
-- deleted here, each through sync_edge_on_delete while both its memories still exist, rather
-- than by the foreign keys' cascade, which the edge log could not see.
DROP TRIGGER IF EXISTS sync_tombstone_on_delete;
CREATE TRIGGER sync_tombstone_on_delete BEFORE DELETE ON memories
BEGIN
    DELETE FROM edges WHERE src = old.pk OR dst = old.pk;
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    INSERT INTO sync_tombstones (id, deleted_at, seq, purged, deleted_updated_at, hlc, deleted_hlc)
    SELECT old.id, strftime('%Y-%m-%dT%H:%M:%f', 'now') || '+00:00', seq, 0, old.updated_at,
           printf('%015d-%010d-%s', hlc_wall, hlc_counter, (SELECT value FROM meta WHERE key = 'store_id')),
           (SELECT hlc FROM memory_changes WHERE pk = old.pk)
    FROM sync_clock WHERE id = 1
    ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at, seq = excluded.seq,
        deleted_updated_at = excluded.deleted_updated_at, hlc = excluded.hlc, deleted_hlc = excluded.deleted_hlc;
END;

DROP TRIGGER IF EXISTS sync_edge_on_insert;
CREATE TRIGGER sync_edge_on_insert AFTER INSERT ON edges
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    INSERT INTO sync_edge_log (src_id, type, dst_id, deleted_at, seq, hlc)
    SELECT a.id, new.type, b.id, NULL, c.seq,
           printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM memories AS a, memories AS b, sync_clock AS c WHERE a.pk = new.src AND b.pk = new.dst AND c.id = 1
    ON CONFLICT (src_id, type, dst_id) DO UPDATE SET deleted_at = NULL, seq = excluded.seq, hlc = excluded.hlc;
END;

DROP TRIGGER IF EXISTS sync_edge_on_update;
CREATE TRIGGER sync_edge_on_update AFTER UPDATE ON edges
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    INSERT INTO sync_edge_log (src_id, type, dst_id, deleted_at, seq, hlc)
    SELECT a.id, new.type, b.id, NULL, c.seq,
           printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM memories AS a, memories AS b, sync_clock AS c WHERE a.pk = new.src AND b.pk = new.dst AND c.id = 1
    ON CONFLICT (src_id, type, dst_id) DO UPDATE SET deleted_at = NULL, seq = excluded.seq, hlc = excluded.hlc;
END;

DROP TRIGGER IF EXISTS sync_edge_on_delete;
CREATE TRIGGER sync_edge_on_delete AFTER DELETE ON edges
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    UPDATE sync_edge_log
    SET deleted_at = strftime('%Y-%m-%dT%H:%M:%f', 'now') || '+00:00', seq = c.seq,
        hlc = printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM sync_clock AS c
    WHERE c.id = 1
      AND src_id = (SELECT id FROM memories WHERE pk = old.src)
      AND type = old.type
      AND dst_id = (SELECT id FROM memories WHERE pk = old.dst);
END;
