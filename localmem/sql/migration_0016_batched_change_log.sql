-- Schema version 16: a batch of new memories logs its changes in one pass (issue 44, item 4).
--
-- memory_changes_insert stamped each new memory from its own step of the clock: one UPDATE of
-- sync_clock, one read of the wall clock and one stamp per row. A batch writer
-- (storage/change_log.py) now sets sync_clock.batch_from to the first key of its batch, inserts
-- the rows, and then moves the clock once by the batch's size and writes the batch's
-- memory_changes rows with one statement, in key order: seq and the stamp's counter one step
-- per row, as the trigger gave them, under one wall-clock reading. The trigger skips keys at or
-- past batch_from while it is set, and keeps logging every other insert (pull, sync, a bare
-- INSERT). batch_from (migration_0016_batched_change_log_columns.sql) is NULL outside the batch
-- writer's statements.

DROP TRIGGER IF EXISTS memory_changes_insert;
CREATE TRIGGER memory_changes_insert AFTER INSERT ON memories
WHEN new.pk < coalesce((SELECT batch_from FROM sync_clock WHERE id = 1), new.pk + 1)
BEGIN
    UPDATE sync_clock SET seq = seq + 1,
        hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
        hlc_wall = max(hlc_wall, t.now_ms)
    FROM (SELECT localmem_wall_ms() AS now_ms) AS t WHERE id = 1;
    INSERT OR REPLACE INTO memory_changes (pk, seq, hlc)
    SELECT new.pk, seq, printf('%015d-%010d-%s', hlc_wall, hlc_counter, (SELECT value FROM meta WHERE key = 'store_id'))
    FROM sync_clock WHERE id = 1;
END;
