-- Code-index rows that are not the code of the stored embedding under the
-- store's calibration (dimensions that are a multiple of 8, where no
-- padding is needed).
SELECT v.pk, m.id FROM vector_codes AS v
JOIN memory_embeddings AS e ON e.pk = v.pk
JOIN vector_calibration AS cal ON cal.id = 1
LEFT JOIN memories AS m ON m.pk = v.pk
WHERE v.codes <> {{vector_codes}}
ORDER BY v.pk;
