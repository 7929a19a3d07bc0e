-- Conflict copies held here (a marker naming a memory, as is_conflict_copy reads it) without an
-- INVALIDATED_BY edge to the memory their metadata.superseded_by names, with that memory's pk:
-- a pull brought the copy from a server that had no such link (it went with the winner, deleted
-- there and created again by a push). Read as conflict_copies_naming.sql is; a copy stamped
-- with no t_invalid takes its updated_at as the link's.
SELECT c.pk AS copy_pk, c.id, c.metadata, COALESCE(c.t_invalid, c.updated_at) AS t_invalid, w.pk AS winner_pk
FROM memories AS c
JOIN memories AS w ON w.id = CASE WHEN json_valid(c.metadata)
                                  THEN json_extract(c.metadata, '$.superseded_by') END
WHERE instr(c.metadata, 'sync_conflict') > 0 AND c.pk <> w.pk
  AND json_type(c.metadata, '$.sync_conflict.memory_id') = 'text'
  AND json_extract(c.metadata, '$.sync_conflict.memory_id') <> c.id
  AND NOT EXISTS (SELECT 1 FROM edges AS e WHERE e.src = c.pk AND e.dst = w.pk AND e.type = 'INVALIDATED_BY')
ORDER BY c.pk;
