-- Run before schema 15's step where the edge log is missing: a file set back below schema 19
-- (whose step dropped the log) runs the steps from there again. The log is made again, empty, as
-- schema 9 made it; schema 19's step then moves whatever it gathered into the edges and drops it.
CREATE TABLE IF NOT EXISTS sync_edge_log (
    src_id     TEXT NOT NULL,
    type       TEXT NOT NULL,
    dst_id     TEXT NOT NULL,
    deleted_at TEXT,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (src_id, type, dst_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sync_edge_log_seq ON sync_edge_log (seq);
