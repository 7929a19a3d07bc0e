-- The staged vectors become the embeddings, the staged token codes the token
-- codes (the vector index is rebuilt after).
DELETE FROM memory_embeddings;
INSERT INTO memory_embeddings (pk, embedding)
SELECT s.pk, s.embedding FROM reembed_staging AS s JOIN memories AS m ON m.pk = s.pk;
DELETE FROM token_codes;
INSERT INTO token_codes (pk, tokens, codes)
SELECT s.pk, s.tokens, s.codes FROM reembed_staging AS s JOIN memories AS m ON m.pk = s.pk
WHERE s.codes IS NOT NULL;
DELETE FROM reembed_staging;
DELETE FROM meta WHERE key IN ('reembed_target', 'reembed_dimensions');
