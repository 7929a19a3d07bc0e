INSERT INTO memory_embeddings (pk, embedding) VALUES (:pk, :embedding)
ON CONFLICT (pk) DO UPDATE SET embedding = excluded.embedding;
