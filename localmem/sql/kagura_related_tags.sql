-- Tags (lowercased whole tags) in the context(s): how many memories carry
-- each, when a memory carrying it was last updated, and the summary of the
-- most recently updated one that is still valid (else of any). The
-- tag_filter slot is the tag test: membership in :tags (a JSON list), or 1 for
-- every tag (the most used first, :limit of them); an OR of both would scan
-- every tag row.
WITH counted AS (
    SELECT t.tag AS tag, count(*) AS count, max(m.updated_at) AS last_used_at
    FROM memory_tags AS t
    JOIN memories AS m ON m.pk = t.pk
    WHERE {{tag_filter}}
      AND m.archived = 0
      AND (:contexts IS NULL OR m.context IN (SELECT value FROM json_each(:contexts)))
    GROUP BY t.tag
    ORDER BY count DESC, t.tag
    LIMIT :limit
)
SELECT c.tag, c.count, c.last_used_at,
       (SELECT coalesce(m.summary, substr(m.content, 1, 240))
        FROM memory_tags AS t
        JOIN memories AS m ON m.pk = t.pk
        WHERE t.tag = c.tag AND m.archived = 0
          AND (:contexts IS NULL OR m.context IN (SELECT value FROM json_each(:contexts)))
        ORDER BY CASE WHEN m.t_invalid IS NULL OR m.t_invalid > :now THEN 0 ELSE 1 END,
                 m.updated_at DESC, m.pk DESC
        LIMIT 1) AS sample_summary
FROM counted AS c
ORDER BY c.count DESC, c.tag;
