-- The vec0 index is derived from memory_embeddings: dropped and recreated
-- (vector_index_create.sql), then refilled by repair_vectors_fill.sql.
DROP TABLE IF EXISTS memory_vectors;
