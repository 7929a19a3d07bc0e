-- Conflict copies of the memories :ids names (a JSON array; earlier versions a sync or a pull kept as
-- memories of their own, each naming its memory in metadata.sync_conflict), a page at a time: one scan
-- for every id. instr() passes over rows without a conflict mark before any JSON is read; a row whose
-- metadata is not JSON never matches.
SELECT pk, id, content, json_extract(metadata, '$.sync_conflict.memory_id') FROM memories
WHERE pk > :after AND instr(metadata, 'sync_conflict') > 0
  AND CASE WHEN json_valid(metadata) THEN json_extract(metadata, '$.sync_conflict.memory_id') END
      IN (SELECT value FROM json_each(:ids))
ORDER BY pk LIMIT :limit;
