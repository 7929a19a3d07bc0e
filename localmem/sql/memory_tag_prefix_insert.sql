-- One (prefix, pk) row of memory_tag_prefixes.
INSERT OR IGNORE INTO memory_tag_prefixes (prefix, pk) VALUES (?, ?);
