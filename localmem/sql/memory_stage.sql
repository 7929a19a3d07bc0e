-- One new memory row into the staging table (memory_stage_create), its key given.
INSERT INTO temp.memory_stage (
    pk, id, content, summary, type, confidence, importance, tags, timestamp,
    updated_at, last_accessed, t_valid, t_invalid, archived, metadata, context,
    relevance_score, thread
) VALUES (
    :pk, :id, :content, :summary, :type, :confidence, :importance, :tags, :timestamp,
    :updated_at, :last_accessed, :t_valid, :t_invalid, :archived, :metadata, :context,
    :relevance_score, :thread
);
