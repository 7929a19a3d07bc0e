DELETE FROM memory_tags WHERE pk = :pk;
