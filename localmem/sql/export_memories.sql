-- Export: every memory with its canonical float32 embedding (NULL when it has
-- none), its token codes (NULL when it has none), its sync stamp and what this
-- store has seen of it (a JSON list of [replica, stamp]: maintenance/import_stamps.py),
-- in insertion order, so a re-import keeps the same order.
SELECT m.*, e.embedding AS embedding, t.tokens AS token_count, t.codes AS token_codes, c.hlc AS sync_hlc,
       (SELECT json_group_array(json_array(s.replica, s.hlc)) FROM sync_seen AS s WHERE s.id = m.id) AS sync_seen
FROM memories AS m
LEFT JOIN memory_embeddings AS e ON e.pk = m.pk
LEFT JOIN token_codes AS t ON t.pk = m.pk
LEFT JOIN memory_changes AS c ON c.pk = m.pk
ORDER BY m.pk;
