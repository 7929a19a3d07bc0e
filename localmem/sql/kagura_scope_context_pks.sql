-- The keys of the memories of the scope's context(s) (:contexts, a JSON list),
-- as one comma-separated text, from the context index alone (see
-- kagura_scope_tag_pks.sql).
SELECT group_concat(pk) FROM memories
WHERE context IN (SELECT value FROM json_each(:contexts));
