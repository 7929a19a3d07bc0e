SELECT count(*) FROM memories_fts WHERE memories_fts MATCH :match;
