-- Enumeration by exact, case-insensitive tags (any of), AutoMem's order.
SELECT m.* FROM memories AS m
WHERE m.pk IN (SELECT t.pk FROM memory_tags AS t WHERE t.tag IN (SELECT value FROM json_each(:tags)))
ORDER BY m.importance DESC, m.timestamp DESC, m.id ASC
LIMIT :limit OFFSET :offset;
