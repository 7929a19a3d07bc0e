-- Embeddings whose memory is gone.
SELECT e.pk FROM memory_embeddings AS e
WHERE e.pk NOT IN (SELECT pk FROM memories)
ORDER BY e.pk;
