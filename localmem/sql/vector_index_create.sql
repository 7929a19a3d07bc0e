-- The vec0 kNN index; {dimensions} is filled in when the dimension is known.
CREATE VIRTUAL TABLE IF NOT EXISTS memory_vectors USING vec0 (
    pk INTEGER PRIMARY KEY,
    embedding float[{dimensions}] distance_metric=cosine
);
