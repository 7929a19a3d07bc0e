DELETE FROM memory_metadata_terms WHERE pk = :pk;
