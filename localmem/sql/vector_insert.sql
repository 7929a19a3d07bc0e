INSERT INTO memory_vectors (pk, embedding) VALUES (:pk, :embedding);
