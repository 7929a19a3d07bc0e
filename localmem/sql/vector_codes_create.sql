-- The kNN index over embedding codes ({bits} = 3 bits per padded dimension).
CREATE VIRTUAL TABLE IF NOT EXISTS memory_vector_codes USING vec0 (
    pk INTEGER PRIMARY KEY,
    codes bit[{bits}]
);
