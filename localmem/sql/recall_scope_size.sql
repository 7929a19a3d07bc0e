-- Upper bounds on how many memories a scope admits, from index-only counts
-- capped at :cap: memories having any filter tag (or prefix), and memories
-- in the time window.
SELECT
    CASE WHEN :tags IS NULL THEN NULL ELSE (
        SELECT count(*) FROM (
            SELECT pk FROM memory_tag_prefixes
            WHERE :tag_match = 'prefix' AND prefix IN (SELECT value FROM json_each(:tags))
            UNION ALL
            SELECT pk FROM memory_tags
            WHERE :tag_match = 'exact' AND tag IN (SELECT value FROM json_each(:tags))
            LIMIT :cap)) END AS tagged,
    CASE WHEN :window_start IS NULL AND :window_end IS NULL THEN NULL ELSE (
        SELECT count(*) FROM (
            SELECT 1 FROM memories
            WHERE timestamp >= coalesce(:window_start, '') AND timestamp <= coalesce(:window_end, '9999')
            LIMIT :cap)) END AS windowed;
