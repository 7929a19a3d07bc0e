-- Code-index rows without an embedding (and so usually without a memory).
SELECT v.pk FROM vector_codes AS v
WHERE v.pk NOT IN (SELECT pk FROM memory_embeddings)
ORDER BY v.pk;
