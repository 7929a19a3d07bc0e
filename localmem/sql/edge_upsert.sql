-- Write an edge with its change number and clock stamp in the same row (schema 19): the clock
-- steps as every change trigger steps it (migration 0015), at :now_ms (the store's clock, which
-- the caller has just read; NULL: read it here), and the edge takes the new number and stamp, or
-- :hlc (the stamp a sync copies with the edge).
UPDATE sync_clock SET seq = seq + 1,
    hlc_counter = CASE WHEN t.now_ms > hlc_wall THEN 0 ELSE hlc_counter + 1 END,
    hlc_wall = max(hlc_wall, t.now_ms)
FROM (SELECT coalesce(:now_ms, localmem_wall_ms()) AS now_ms) AS t WHERE id = 1;
INSERT INTO edges (src, dst, type, strength, updated_at, properties, seq, hlc)
SELECT :src, :dst, :type, :strength, :updated_at, :properties, c.seq,
       coalesce(:hlc, printf('%015d-%010d-%s', c.hlc_wall, c.hlc_counter,
                             (SELECT value FROM meta WHERE key = 'store_id')))
FROM sync_clock AS c WHERE c.id = 1
ON CONFLICT (src, type, dst) DO UPDATE SET
    strength = excluded.strength,
    updated_at = excluded.updated_at,
    properties = excluded.properties,
    seq = excluded.seq,
    hlc = excluded.hlc;
