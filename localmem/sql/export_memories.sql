-- Export: every memory with its canonical float32 embedding (NULL when it has
-- none) and its token codes (NULL when it has none), in insertion order, so a
-- re-import keeps the same order.
SELECT m.*, e.embedding AS embedding, t.tokens AS token_count, t.codes AS token_codes
FROM memories AS m
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
LEFT JOIN token_codes AS t ON t.pk = m.pk
ORDER BY m.pk;
