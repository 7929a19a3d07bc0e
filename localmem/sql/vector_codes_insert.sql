INSERT INTO memory_vector_codes (pk, codes) VALUES (:pk, {{vector_codes}});
