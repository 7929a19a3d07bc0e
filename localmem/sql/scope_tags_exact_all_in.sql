-- Scope fragment for searches the tags drive: all of :tags (exact match).
{{scope_key}} IN (SELECT t.pk FROM memory_tags AS t WHERE t.tag IN (SELECT value FROM json_each(:tags))
         GROUP BY t.pk HAVING count(*) >= :tag_count)
