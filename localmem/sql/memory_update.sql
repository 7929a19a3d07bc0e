UPDATE memories SET
    content = :content, summary = :summary, type = :type, confidence = :confidence,
    importance = :importance, tags = :tags, timestamp = :timestamp,
    updated_at = :updated_at, last_accessed = :last_accessed, t_valid = :t_valid,
    t_invalid = :t_invalid, archived = :archived, metadata = :metadata,
    context = :context, relevance_score = :relevance_score, thread = :thread
WHERE pk = :pk;
