-- The staged memory rows into memories in one statement, in key order (the staging table's
-- rowid): the rows memory_insert would write one by one, and their insert triggers run per row.
INSERT INTO main.memories (
    pk, id, content, summary, type, confidence, importance, tags, timestamp,
    updated_at, last_accessed, t_valid, t_invalid, archived, metadata, context,
    relevance_score, thread
)
SELECT pk, id, content, summary, type, confidence, importance, tags, timestamp,
       updated_at, last_accessed, t_valid, t_invalid, archived, metadata, context,
       relevance_score, thread
FROM temp.memory_stage ORDER BY pk;
