DELETE FROM memory_embeddings WHERE pk = :pk;
