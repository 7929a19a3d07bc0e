-- Code-index rows that are not the code of the stored embedding (dimensions
-- that are a multiple of 8, where no padding is needed).
SELECT v.pk, m.id FROM memory_vector_codes AS v
JOIN memory_embeddings AS e ON e.pk = v.pk
LEFT JOIN memories AS m ON m.pk = v.pk
WHERE v.codes <> {{vector_codes}}
ORDER BY v.pk;
