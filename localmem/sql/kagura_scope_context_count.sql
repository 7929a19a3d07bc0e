-- How many memories the scope's context(s) (:contexts, a JSON list) hold, from
-- the context index alone.
SELECT count(*) FROM memories WHERE context IN (SELECT value FROM json_each(:contexts));
