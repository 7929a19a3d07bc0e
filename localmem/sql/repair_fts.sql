-- Rebuild the contentless FTS5 index from memories (as fts_insert.sql does:
-- content, and the tags as given joined by spaces).
INSERT INTO memories_fts (memories_fts) VALUES ('delete-all');
INSERT INTO memories_fts (rowid, content, tags)
SELECT m.pk, m.content,
       CASE WHEN json_valid(m.tags) THEN
           coalesce((SELECT group_concat(j.value, ' ') FROM json_each(m.tags) AS j), '')
       ELSE '' END
FROM memories AS m;
