-- Scope fragment: no tag segment-prefix equal to an excluded tag.
NOT EXISTS (SELECT 1 FROM memory_tag_prefixes AS x
            WHERE x.pk = m.pk AND x.prefix IN (SELECT value FROM json_each(:exclude_tags)))
