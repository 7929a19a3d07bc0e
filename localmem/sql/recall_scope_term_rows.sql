-- How many memories in the scope match one keyword (content, tags or thread
-- context, as the keyword score reads them).
SELECT count(*) FROM memories_fts AS f
JOIN memories AS m ON m.pk = f.rowid
WHERE memories_fts MATCH :match AND {{scope}};
