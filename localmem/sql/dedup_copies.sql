-- The memories holding one exact-duplicate key (storage/dedup_keys.py), oldest first;
-- the caller keeps the current ones (recall/state.py's rules).
SELECT m.*
FROM memory_dedup_keys AS k JOIN memories AS m ON m.pk = k.pk
WHERE k.key = :key
ORDER BY m.pk;
