-- Embeddings that are not :bytes long (dimensions x 4 bytes of float32).
SELECT e.pk, m.id FROM memory_embeddings AS e
LEFT JOIN memories AS m ON m.pk = e.pk
WHERE length(e.embedding) <> :bytes OR typeof(e.embedding) <> 'blob'
ORDER BY e.pk;
