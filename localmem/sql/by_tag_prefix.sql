-- Enumeration by tag prefix (any of): :tags are canonical prefixes, so
-- `project` finds project:alpha as recall's tag filter does. AutoMem's order.
SELECT m.* FROM memories AS m
WHERE m.pk IN (SELECT t.pk FROM memory_tag_prefixes AS t WHERE t.prefix IN (SELECT value FROM json_each(:tags)))
ORDER BY m.importance DESC, m.timestamp DESC, m.id ASC
LIMIT :limit OFFSET :offset;
