-- One (tag, pk) row of memory_tags; tags arrive lowercased.
INSERT OR IGNORE INTO memory_tags (tag, pk) VALUES (?, ?);
