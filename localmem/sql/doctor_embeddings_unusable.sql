-- Embeddings of the right length whose norm, as sqlite-vec computes it in
-- float32, is NULL (NaN), infinite or outside [:low, :high]: a band a little
-- wider than the accepted norms, so this finds every embedding validation
-- would refuse and a few more; validation.embedding_problem has the last word.
SELECT e.pk, m.id, e.embedding FROM memory_embeddings AS e
JOIN memories AS m ON m.pk = e.pk
WHERE typeof(e.embedding) = 'blob' AND length(e.embedding) = :bytes
  AND coalesce(vec_distance_l2(e.embedding, :zero) NOT BETWEEN :low AND :high, 1)
ORDER BY e.pk;
