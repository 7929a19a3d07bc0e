-- Schema version 5: the vector index holds 3-bit codes of each embedding
-- (memory_vector_codes, created in Python once the dimension is known); the
-- float32 vec0 index it replaces is dropped. Exact cosines come from
-- memory_embeddings.
DROP TABLE IF EXISTS memory_vectors;
