-- Conflict copies of :id in the trash (forget_conflict_copies.sql's, deleted since), a page at a time by id.
SELECT id, record FROM trash
WHERE id > :after AND instr(record, :id) > 0
  AND CASE WHEN json_valid(record) THEN json_extract(record, '$.metadata.sync_conflict.memory_id') END = :id
ORDER BY id LIMIT :limit;
