-- Conflict copies of the memories :ids names (a JSON array) in the trash (forget_conflict_copies.sql's,
-- deleted since), a page at a time by id: one scan for every id.
SELECT id, record, json_extract(record, '$.metadata.sync_conflict.memory_id') FROM trash
WHERE id > :after AND instr(record, 'sync_conflict') > 0
  AND CASE WHEN json_valid(record) THEN json_extract(record, '$.metadata.sync_conflict.memory_id') END
      IN (SELECT value FROM json_each(:ids))
ORDER BY id LIMIT :limit;
