-- How many memories contain each (stemmed) term.
SELECT term, doc FROM memories_fts_terms WHERE term IN (SELECT value FROM json_each(:terms));
