-- Scope fragment for checking a few given rows: any of :tags (exact match).
EXISTS (SELECT 1 FROM memory_tags AS t WHERE t.pk = m.pk AND t.tag IN (SELECT value FROM json_each(:tags)))
