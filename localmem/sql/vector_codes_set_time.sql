UPDATE memory_vector_codes
SET ts = (SELECT unixepoch(timestamp, 'subsec') FROM memories WHERE pk = :pk)
WHERE pk = :pk;
