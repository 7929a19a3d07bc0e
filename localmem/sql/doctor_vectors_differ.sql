-- vec0 rows whose vector is not the canonical embedding.
SELECT v.pk, m.id FROM memory_vectors AS v
JOIN memory_embeddings AS e ON e.pk = v.pk
LEFT JOIN memories AS m ON m.pk = v.pk
WHERE v.embedding <> e.embedding
ORDER BY v.pk;
