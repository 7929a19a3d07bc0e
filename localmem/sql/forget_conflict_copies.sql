-- Conflict copies of :id held here (earlier versions a sync or a pull kept as memories of their
-- own, each naming its memory in metadata.sync_conflict), a page at a time. instr() passes over
-- rows that cannot name it before any JSON is read; a row whose metadata is not JSON never matches.
SELECT pk, id, content FROM memories
WHERE pk > :after AND instr(metadata, :id) > 0
  AND CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.sync_conflict.memory_id') END = :id
ORDER BY pk LIMIT :limit;
