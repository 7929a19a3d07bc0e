-- Embeddings without a row in the code index.
SELECT e.pk, m.id FROM memory_embeddings AS e
LEFT JOIN memories AS m ON m.pk = e.pk
WHERE e.pk NOT IN (SELECT pk FROM vector_codes)
ORDER BY e.pk;
