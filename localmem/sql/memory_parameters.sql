-- Fragment: the parameters of a new memory row, one per column of memory_columns.
:pk, :id, :content, :summary, :type, :confidence, :importance, :tags, :timestamp,
:updated_at, :last_accessed, :t_valid, :t_invalid, :archived, :metadata, :context,
:relevance_score, :thread
