-- How many metadata-term rows the query's value terms have, counted up to :cap.
SELECT count(*) FROM (SELECT 1 FROM memory_metadata_terms
                      WHERE term IN (SELECT value FROM json_each(:terms)) LIMIT :cap);
