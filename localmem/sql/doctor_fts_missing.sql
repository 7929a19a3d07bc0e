-- Memories without a row in the (contentless) FTS5 index.
SELECT m.pk, m.id FROM memories AS m
WHERE m.pk NOT IN (SELECT rowid FROM memories_fts)
ORDER BY m.pk;
