-- Fragment included by every recall channel (alias m = memories): the hard
-- scope every candidate must pass. Archived memories and excluded types never
-- match; tags are looked up in the tag / prefix tables, not scanned.
m.archived = 0
AND m.type NOT IN (SELECT value FROM json_each(:excluded_types))
AND (:window_start IS NULL OR m.timestamp >= :window_start)
AND (:window_end IS NULL OR m.timestamp <= :window_end)
AND (:tags IS NULL OR m.pk IN (
        SELECT p.pk FROM memory_tag_prefixes AS p
        WHERE :tag_match = 'prefix' AND p.prefix IN (SELECT value FROM json_each(:tags))
        GROUP BY p.pk HAVING :tag_mode = 'any' OR count(*) >= :tag_count
        UNION ALL
        SELECT t.pk FROM memory_tags AS t
        WHERE :tag_match = 'exact' AND t.tag IN (SELECT value FROM json_each(:tags))
        GROUP BY t.pk HAVING :tag_mode = 'any' OR count(*) >= :tag_count))
AND (:exclude_tags IS NULL OR m.pk NOT IN (
        SELECT x.pk FROM memory_tag_prefixes AS x
        WHERE x.prefix IN (SELECT value FROM json_each(:exclude_tags))))
