DELETE FROM memories_fts WHERE rowid = :pk;
