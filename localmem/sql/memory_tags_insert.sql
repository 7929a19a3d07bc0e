INSERT OR IGNORE INTO memory_tags (tag, pk) SELECT value, :pk FROM json_each(:tags);
