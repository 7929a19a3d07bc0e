-- Full-text rows of the given memories (:pks, a JSON list; NULL = every
-- memory): content, tags, and the content of up to three thread neighbours
-- on each side; then the memory's context (the order, not a column of the row).
-- Rows come in the order of the index on context (context, then key), the order the full-text
-- rows have always been written in; the caller merges rows it made itself in the same order.
-- Two arms, not `:pks IS NULL OR pk IN (...)`: the OR made SQLite scan every memory for a
-- one-memory write.
WITH targets AS (
    SELECT pk, thread FROM memories WHERE :pks IS NULL
    UNION ALL
    SELECT pk, thread FROM memories WHERE pk IN (SELECT value FROM json_each(:pks))
),
{{thread_segments}},
context AS (
    SELECT s.pk,
           lag(s.content, 1, '') OVER w AS prev1, lead(s.content, 1, '') OVER w AS next1,
           lag(s.content, 2, '') OVER w AS prev2, lead(s.content, 2, '') OVER w AS next2,
           lag(s.content, 3, '') OVER w AS prev3, lead(s.content, 3, '') OVER w AS next3
    FROM segmented AS s
    WINDOW w AS (PARTITION BY s.thread, s.segment ORDER BY s.timestamp, s.pk)
)
SELECT m.pk, m.content,
       CASE WHEN json_valid(m.tags) THEN
           coalesce((SELECT group_concat(j.value, ' ') FROM json_each(m.tags) AS j), '')
       ELSE '' END,
       coalesce(c.prev1, ''), coalesce(c.next1, ''), coalesce(c.prev2, ''),
       coalesce(c.next2, ''), coalesce(c.prev3, ''), coalesce(c.next3, ''),
       m.context
FROM targets AS t
JOIN memories AS m ON m.pk = t.pk
LEFT JOIN context AS c ON c.pk = m.pk
ORDER BY m.context, m.pk;
