-- Cosine of the given memories' embeddings (:ids, a JSON list) to the store's
-- mean direction (:centre), for centred cosines.
SELECT m.id, 1.0 - vec_distance_cosine(e.embedding, :centre) AS cosine
FROM memories AS m JOIN memory_embeddings AS e ON e.pk = m.pk
WHERE m.id IN (SELECT value FROM json_each(:ids));
