SELECT pk, embedding FROM memory_embeddings ORDER BY pk;
