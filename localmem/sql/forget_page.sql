-- Every memory, a page at a time (the secret scan of forget --secrets, and audit).
SELECT pk, id, content, metadata, tags, context, last_accessed, updated_at FROM memories
WHERE pk > :after ORDER BY pk LIMIT :limit;
