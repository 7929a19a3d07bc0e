-- Fragment included by the Kagura recall statements (alias m = memories):
-- the hard scope of POST /api/v1/memory/recall. Archived memories and the
-- excluded types never match; :contexts (a JSON list, NULL = every context)
-- is the caller's context(s); :types matches the canonical type, or
-- :raw_types the metadata "type" (lowercased); :scope matches metadata
-- "scope" ("persistent" when unset); :tags are tag prefixes (exact whole
-- tags or hierarchical prefixes), any or all of them.
m.archived = 0
AND m.type NOT IN (SELECT value FROM json_each(:excluded_types))
AND (:contexts IS NULL OR m.context IN (SELECT value FROM json_each(:contexts)))
AND (:types IS NULL
     OR m.type IN (SELECT value FROM json_each(:types))
     OR lower(json_extract(m.metadata, '$.type')) IN (SELECT value FROM json_each(:raw_types)))
AND (:scope IS NULL OR lower(coalesce(json_extract(m.metadata, '$.scope'), 'persistent')) = :scope)
AND (:tags IS NULL OR m.pk IN (
        SELECT p.pk FROM memory_tag_prefixes AS p
        WHERE p.prefix IN (SELECT value FROM json_each(:tags))
        GROUP BY p.pk HAVING :tag_mode = 'any' OR count(*) >= :tag_count))
