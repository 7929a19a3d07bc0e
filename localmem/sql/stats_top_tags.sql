-- Most used tags (lowercased, as indexed).
SELECT tag, count(*) AS count FROM memory_tags GROUP BY tag ORDER BY count DESC, tag LIMIT :limit;
