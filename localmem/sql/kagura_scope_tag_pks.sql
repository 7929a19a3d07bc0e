-- The keys of the memories having the scope's tag prefixes (:tags, any or all of
-- them as :tag_mode says), as one comma-separated text, from the tag index
-- alone: the semantic arm restricts the code kNN to them and checks the rest of
-- the scope (kagura_scope_filter) on the hits. A key may repeat.
SELECT group_concat(pk) FROM (
    SELECT pk FROM memory_tag_prefixes
    WHERE :tag_mode = 'any' AND prefix IN (SELECT value FROM json_each(:tags))
    UNION ALL
    SELECT pk FROM memory_tag_prefixes
    WHERE :tag_mode <> 'any' AND prefix IN (SELECT value FROM json_each(:tags))
    GROUP BY pk HAVING count(*) >= :tag_count
);
