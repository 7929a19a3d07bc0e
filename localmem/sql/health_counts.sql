SELECT
    (SELECT count(*) FROM memories) AS memories,
    (SELECT count(*) FROM memory_embeddings) AS embeddings,
    (SELECT count(*) FROM token_codes) AS token_coded,
    (SELECT count(*) FROM edges) AS edges,
    (SELECT count(*) FROM memory_tags) AS tags,
    (SELECT count(DISTINCT pk) FROM memory_tags) AS tagged_memories,
    (SELECT count(*) FROM memories WHERE tags <> '[]') AS memories_with_tags,
    (SELECT count(*) FROM memories AS m WHERE NOT EXISTS
        (SELECT 1 FROM memory_embeddings AS e WHERE e.pk = m.pk)) AS memories_without_embedding;
