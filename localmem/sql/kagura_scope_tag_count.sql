-- How many memories have the scope's tag prefixes (:tags, any or all of them as
-- :tag_mode says), from the tag index alone (see kagura_scope_tag_pks.sql).
SELECT count(*) FROM (
    SELECT pk FROM memory_tag_prefixes
    WHERE prefix IN (SELECT value FROM json_each(:tags))
    GROUP BY pk HAVING :tag_mode = 'any' OR count(*) >= :tag_count
);
