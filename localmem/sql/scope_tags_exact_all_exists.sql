-- Scope fragment for checking a few given rows: all of :tags (exact match).
(SELECT count(*) FROM memory_tags AS t
 WHERE t.pk = m.pk AND t.tag IN (SELECT value FROM json_each(:tags))) >= :tag_count
