-- Fragment: every column a new memory row is written with, in the order of memory_parameters.
pk, id, content, summary, type, confidence, importance, tags, timestamp,
updated_at, last_accessed, t_valid, t_invalid, archived, metadata, context,
relevance_score, thread
