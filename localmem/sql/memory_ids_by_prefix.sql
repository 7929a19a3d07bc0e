-- Ids starting with :prefix, as a range on the UNIQUE index of memories.id
-- (every character of a canonical UUID sorts below '~').
SELECT id FROM memories
WHERE id >= :prefix AND id < :prefix || '~'
ORDER BY id
LIMIT :limit;
