-- Tags (lowercased whole tags) in the context(s): how many memories carry
-- each, the summary of the most recently updated one, and when that was.
-- :tags NULL means every tag (the most used first, :limit of them).
WITH tagged AS (
    SELECT t.tag AS tag,
           coalesce(m.summary, substr(m.content, 1, 240)) AS sample_summary,
           row_number() OVER (PARTITION BY t.tag ORDER BY m.updated_at DESC, m.pk DESC) AS n,
           count(*) OVER (PARTITION BY t.tag) AS count,
           max(m.updated_at) OVER (PARTITION BY t.tag) AS last_used_at
    FROM memory_tags AS t
    JOIN memories AS m ON m.pk = t.pk
    WHERE (:tags IS NULL OR t.tag IN (SELECT value FROM json_each(:tags)))
      AND m.archived = 0
      AND (:contexts IS NULL OR m.context IN (SELECT value FROM json_each(:contexts)))
)
SELECT tag, count, sample_summary, last_used_at
FROM tagged WHERE n = 1
ORDER BY count DESC, tag
LIMIT :limit;
