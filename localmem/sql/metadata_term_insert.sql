-- One (term, pk) row of memory_metadata_terms.
INSERT OR IGNORE INTO memory_metadata_terms (term, pk) VALUES (?, ?);
