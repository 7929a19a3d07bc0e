-- GET /memories/{id}/related: the memories a bounded walk reached (storage/walk.py),
-- given as a JSON object {pk: depth}, most important first.
SELECT j.value AS depth, m.*
FROM json_each(:found) AS j
JOIN memories AS m ON m.pk = CAST(j.key AS INTEGER)
ORDER BY m.importance DESC, m.timestamp DESC, m.id
LIMIT :limit;
