-- Log the memories inserted since change_log_batch_open: every key from batch_from to the
-- largest (the keys a batch takes were free, and it takes them in order). The clock moves once,
-- by that span; each memory then gets the change number and stamp counter the per-row trigger
-- would have given it (the last key the clock's own values, each key below one step less),
-- under one wall-clock reading: later than every earlier change, in key order.
UPDATE sync_clock SET seq = seq + t.n,
    hlc_counter = CASE WHEN t.n = 0 THEN hlc_counter
                       WHEN t.now_ms > hlc_wall THEN t.n - 1 ELSE hlc_counter + t.n END,
    hlc_wall = CASE WHEN t.n = 0 THEN hlc_wall ELSE max(hlc_wall, t.now_ms) END
FROM (SELECT localmem_wall_ms() AS now_ms,
             max(0, coalesce((SELECT max(pk) FROM memories) - c.batch_from + 1, 0)) AS n
      FROM sync_clock AS c WHERE c.id = 1) AS t
WHERE id = 1;
INSERT OR REPLACE INTO memory_changes (pk, seq, hlc)
SELECT m.pk, c.seq - (t.top - m.pk),
       printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter - (t.top - m.pk), t.replica)
FROM sync_clock AS c
     CROSS JOIN (SELECT max(pk) AS top, (SELECT value FROM meta WHERE key = 'store_id') AS replica
                 FROM memories) AS t
     CROSS JOIN memories AS m
WHERE c.id = 1 AND m.pk >= c.batch_from;  -- a key-range scan: rows arrive in key order
UPDATE sync_clock SET batch_from = NULL WHERE id = 1;
