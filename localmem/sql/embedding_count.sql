SELECT count(*) FROM memory_embeddings;
