SELECT embedding FROM memory_embeddings WHERE pk = :pk;
