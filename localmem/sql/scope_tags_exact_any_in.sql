-- Scope fragment for searches the tags drive: any of :tags (exact match).
{{scope_key}} IN (SELECT t.pk FROM memory_tags AS t WHERE t.tag IN (SELECT value FROM json_each(:tags)))
