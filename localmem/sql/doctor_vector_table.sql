SELECT count(*) FROM sqlite_master WHERE name = 'memory_vector_codes';
