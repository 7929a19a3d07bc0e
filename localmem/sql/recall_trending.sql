-- Trending channel (no query): the most important memories in scope, or the
-- newest / oldest (by updated_at, else timestamp) when a time sort is asked for.
SELECT m.* FROM memories AS m
WHERE {{scope}}
ORDER BY
    CASE WHEN :order_by = 'score' THEN m.importance END DESC,
    CASE WHEN :order_by IN ('time_desc', 'updated_desc') THEN coalesce(m.updated_at, m.timestamp) END DESC,
    CASE WHEN :order_by IN ('time_asc', 'updated_asc') THEN coalesce(m.updated_at, m.timestamp) END ASC,
    m.timestamp DESC
LIMIT :k;
