INSERT OR REPLACE INTO reembed_staging (pk, embedding, digest, tokens, codes)
VALUES (:pk, :embedding, :digest, :tokens, :codes);
