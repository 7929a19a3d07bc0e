INSERT INTO memory_vectors (pk, embedding)
SELECT pk, embedding FROM memory_embeddings ORDER BY pk;
