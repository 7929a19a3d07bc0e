INSERT INTO memory_vector_codes (pk, codes, ts)
VALUES (:pk, {{vector_codes}}, (SELECT unixepoch(timestamp, 'subsec') FROM memories WHERE pk = :pk));
