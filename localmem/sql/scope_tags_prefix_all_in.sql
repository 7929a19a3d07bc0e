-- Scope fragment for searches the tags drive: all of :tags (prefix match).
{{scope_key}} IN (SELECT t.pk FROM memory_tag_prefixes AS t WHERE t.prefix IN (SELECT value FROM json_each(:tags))
         GROUP BY t.pk HAVING count(*) >= :tag_count)
