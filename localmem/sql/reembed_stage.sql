INSERT OR REPLACE INTO reembed_staging (pk, embedding, digest) VALUES (:pk, :embedding, :digest);
