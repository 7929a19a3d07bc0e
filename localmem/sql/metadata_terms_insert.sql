INSERT OR IGNORE INTO memory_metadata_terms (term, pk) SELECT value, :pk FROM json_each(:terms);
