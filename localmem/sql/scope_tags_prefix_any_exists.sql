-- Scope fragment for checking a few given rows: any of :tags (prefix match).
EXISTS (SELECT 1 FROM memory_tag_prefixes AS t WHERE t.pk = m.pk AND t.prefix IN (SELECT value FROM json_each(:tags)))
