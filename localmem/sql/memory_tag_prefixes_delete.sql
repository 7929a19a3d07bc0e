DELETE FROM memory_tag_prefixes WHERE pk = :pk;
