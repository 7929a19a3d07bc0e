-- Schema version 7: the vector index becomes a plain table of 3-bit codes that
-- each process scans in memory (storage/code_search.py), replacing the vec0
-- table of schema 5, whose scan cost several times an exact numpy scan.
--
-- vector_calibration holds the per-dimension thresholds of the code,
-- measured from the store's own vectors (storage/code_calibration.py) so
-- that vectors sharing a common direction or a narrow spread still get
-- informative codes. vector_clock counts every change to the codes; a
-- process that loaded the codes at clock value s reads the rows with
-- seq > s and the deletions logged after s to catch up, and reloads
-- everything when the calibration's generation changes.
DROP TABLE IF EXISTS memory_vector_codes;

CREATE TABLE vector_codes (
    pk    INTEGER PRIMARY KEY,  -- memories.pk (rows are deleted explicitly with the memory)
    seq   INTEGER NOT NULL,     -- vector_clock.seq when the row was last written
    ts    REAL NOT NULL,        -- the memory's timestamp, unix seconds, for time windows
    codes BLOB NOT NULL         -- x > low, x > mid, x > high: 3 bits per padded dimension
);
CREATE INDEX vector_codes_seq ON vector_codes (seq);

CREATE TABLE vector_code_deletions (
    seq INTEGER PRIMARY KEY,
    pk  INTEGER NOT NULL
);

CREATE TABLE vector_clock (
    id   INTEGER PRIMARY KEY CHECK (id = 1),
    seq  INTEGER NOT NULL,
    rows INTEGER NOT NULL
);
INSERT INTO vector_clock (id, seq, rows) VALUES (1, 0, 0);

-- One row once the dimension is known. low/mid/high: float32 thresholds per
-- padded dimension. depth_1bit / depth_3bit: the share of the store each
-- scan stage keeps so that the true ten nearest survive (measured on a
-- sample at calibration). checked_rows: the store size at the last check.
CREATE TABLE vector_calibration (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    generation    INTEGER NOT NULL,
    dims          INTEGER NOT NULL,
    low           BLOB NOT NULL,
    mid           BLOB NOT NULL,
    high          BLOB NOT NULL,
    depth_1bit    REAL NOT NULL,
    depth_3bit    REAL NOT NULL,
    sample_recall REAL,
    sample_rows   INTEGER NOT NULL,
    checked_rows  INTEGER NOT NULL,
    calibrated_at TEXT
);

CREATE TRIGGER vector_codes_inserted AFTER INSERT ON vector_codes
BEGIN
    UPDATE vector_clock SET seq = seq + 1, rows = rows + 1 WHERE id = 1;
END;

CREATE TRIGGER vector_codes_updated AFTER UPDATE ON vector_codes
BEGIN
    UPDATE vector_clock SET seq = seq + 1 WHERE id = 1;
END;

CREATE TRIGGER vector_codes_deleted AFTER DELETE ON vector_codes
BEGIN
    UPDATE vector_clock SET seq = seq + 1, rows = rows - 1 WHERE id = 1;
    INSERT INTO vector_code_deletions (seq, pk) VALUES ((SELECT seq FROM vector_clock WHERE id = 1), old.pk);
END;

-- Deleting a memory moves the change counter of schema 6 too, so that counter
-- alone tells whether any memory's content changed (recall keeps document
-- frequencies and keyword hits until it does; Backend.content_cache).
CREATE TRIGGER memory_changes_delete AFTER DELETE ON memories
BEGIN
    UPDATE sync_clock SET seq = seq + 1 WHERE id = 1;
END;
