-- Scope fragment for checking a few given rows: all of :tags (prefix match).
(SELECT count(*) FROM memory_tag_prefixes AS t
 WHERE t.pk = m.pk AND t.prefix IN (SELECT value FROM json_each(:tags))) >= :tag_count
