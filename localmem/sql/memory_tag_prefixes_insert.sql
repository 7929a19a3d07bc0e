INSERT OR IGNORE INTO memory_tag_prefixes (prefix, pk) SELECT value, :pk FROM json_each(:prefixes);
