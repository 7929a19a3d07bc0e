INSERT INTO memories (
    id, content, summary, type, confidence, importance, tags, timestamp,
    updated_at, last_accessed, t_valid, t_invalid, archived, metadata, context,
    relevance_score, thread
) VALUES (
    :id, :content, :summary, :type, :confidence, :importance, :tags, :timestamp,
    :updated_at, :last_accessed, :t_valid, :t_invalid, :archived, :metadata, :context,
    :relevance_score, :thread
)
RETURNING pk;
