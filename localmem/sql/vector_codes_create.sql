-- The kNN index over embedding codes ({bits} = 3 bits per padded dimension),
-- with each memory's timestamp (unix seconds) as a metadata column, so a time
-- window is applied inside the scan.
CREATE VIRTUAL TABLE IF NOT EXISTS memory_vector_codes USING vec0 (
    pk INTEGER PRIMARY KEY,
    codes bit[{bits}],
    ts float
);
