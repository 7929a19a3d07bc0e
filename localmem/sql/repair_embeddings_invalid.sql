-- Drop embeddings that belong to no memory or have the wrong length; the
-- memories concerned are re-embedded afterwards when the embedder works.
DELETE FROM memory_embeddings
WHERE pk NOT IN (SELECT pk FROM memories)
   OR typeof(embedding) <> 'blob' OR length(embedding) <> :bytes;
