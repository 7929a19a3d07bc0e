-- One memory row, its key given: a batch's keys are assigned up front
-- (one past the largest, as SQLite would), so one executemany writes them all.
INSERT INTO memories (
    pk, id, content, summary, type, confidence, importance, tags, timestamp,
    updated_at, last_accessed, t_valid, t_invalid, archived, metadata, context,
    relevance_score, thread
) VALUES (
    :pk, :id, :content, :summary, :type, :confidence, :importance, :tags, :timestamp,
    :updated_at, :last_accessed, :t_valid, :t_invalid, :archived, :metadata, :context,
    :relevance_score, :thread
);
