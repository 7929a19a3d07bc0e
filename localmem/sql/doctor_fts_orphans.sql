-- FTS5 rows whose memory is gone.
SELECT f.rowid AS pk FROM memories_fts AS f
WHERE f.rowid NOT IN (SELECT pk FROM memories)
ORDER BY f.rowid;
