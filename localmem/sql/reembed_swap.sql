-- The staged vectors become the embeddings (the vector index is rebuilt after).
DELETE FROM memory_embeddings;
INSERT INTO memory_embeddings (pk, embedding)
SELECT s.pk, s.embedding FROM reembed_staging AS s JOIN memories AS m ON m.pk = s.pk;
DELETE FROM reembed_staging;
DELETE FROM meta WHERE key IN ('reembed_target', 'reembed_dimensions');
