-- Schema version 5: the float32 vec0 index (memory_vectors) is dropped. Schema
-- 5 and 6 kept 3-bit codes in a vec0 table; schema 7 replaced that with the
-- plain table vector_codes. Exact cosines come from memory_embeddings.
DROP TABLE IF EXISTS memory_vectors;
