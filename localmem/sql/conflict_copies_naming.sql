-- Conflict copies held here that name one of :ids (a JSON array of memory ids) in
-- metadata.sync_conflict.memory_id, or are one of them (a copy put back itself: its trash entry
-- may lack the link, whose removal reached this store before the copy's delete), with the pk of
-- the memory they name, in one pass over the memories: instr() passes over rows that are no copy
-- before any JSON is read. A copy already linked to it (by the edges a restore or an import put
-- back) is left as it is.
SELECT c.pk AS copy_pk, c.id, c.metadata, c.t_invalid, w.pk AS winner_pk
FROM memories AS c
JOIN memories AS w ON w.id = CASE WHEN json_valid(c.metadata)
                                  THEN json_extract(c.metadata, '$.sync_conflict.memory_id') END
WHERE instr(c.metadata, 'sync_conflict') > 0 AND c.pk <> w.pk  -- a marker naming itself makes no copy
  AND (w.id IN (SELECT value FROM json_each(:ids)) OR c.id IN (SELECT value FROM json_each(:ids)))
  AND NOT EXISTS (SELECT 1 FROM edges AS e WHERE e.src = c.pk AND e.dst = w.pk AND e.type = 'INVALIDATED_BY')
ORDER BY c.pk;
