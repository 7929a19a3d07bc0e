-- Conflict copies held here that name one of :ids (a JSON array of memory ids: memories a sync
-- has just brought back here over their delete), with the pk of the memory they name, whose
-- link to it this store removed itself (a removal logged here and stamped by this store: the
-- delete's, which removed the memory's edges) and holds no longer. A copy never linked here, or
-- whose link a removal received from another store took away (a peer who saw the link removed
-- it), is left as it is. Read as conflict_copies_naming.sql is.
SELECT c.pk AS copy_pk, c.id, c.metadata, c.t_invalid, w.pk AS winner_pk
FROM memories AS c
JOIN memories AS w ON w.id = CASE WHEN json_valid(c.metadata)
                                  THEN json_extract(c.metadata, '$.sync_conflict.memory_id') END
JOIN sync_edge_tombstones AS t ON t.src_id = c.id AND t.type = 'INVALIDATED_BY' AND t.dst_id = w.id
WHERE instr(c.metadata, 'sync_conflict') > 0 AND c.pk <> w.pk  -- a marker naming itself makes no copy
  AND w.id IN (SELECT value FROM json_each(:ids))
  AND substr(t.hlc, 28) = (SELECT value FROM meta WHERE key = 'store_id')
  AND NOT EXISTS (SELECT 1 FROM edges AS e WHERE e.src = c.pk AND e.dst = w.pk AND e.type = 'INVALIDATED_BY')
ORDER BY c.pk;
