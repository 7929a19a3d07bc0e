-- A connection's private staging table for a batch of new memory rows (storage/staged_rows.py):
-- in the temporary database, so no other connection or process ever sees it. pk is its rowid
-- (rows come in key order); the other columns, untyped, keep each bound value as it is, and
-- memory_insert_staged gives them memories' own affinities. The columns of memory_columns.
CREATE TEMP TABLE IF NOT EXISTS memory_stage (
    pk INTEGER PRIMARY KEY, id, content, summary, type, confidence, importance, tags, timestamp,
    updated_at, last_accessed, t_valid, t_invalid, archived, metadata, context, relevance_score,
    thread
);
