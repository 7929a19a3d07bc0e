-- Memories whose content or metadata holds :needle (case-insensitive for ASCII), a page at a time.
SELECT pk, id, content, metadata FROM memories
WHERE pk > :after AND (instr(lower(content), lower(:needle)) > 0 OR instr(lower(metadata), lower(:needle)) > 0)
ORDER BY pk LIMIT :limit;
