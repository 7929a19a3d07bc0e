-- The keys of the memories having any of the scope's tags (:tags, matched as
-- :tag_match says), as one comma-separated text, from the tag indexes alone:
-- no memories row is read (the vector channel checks the rest of the scope on
-- the kNN's hits). A key may repeat.
SELECT group_concat(pk) FROM (
    SELECT pk FROM memory_tag_prefixes
    WHERE :tag_match = 'prefix' AND prefix IN (SELECT value FROM json_each(:tags))
    UNION ALL
    SELECT pk FROM memory_tags
    WHERE :tag_match = 'exact' AND tag IN (SELECT value FROM json_each(:tags))
);
