-- The memories holding one exact-duplicate key, oldest first (index memory_dedup_keys_key).
SELECT pk FROM memory_dedup_keys WHERE key = :key ORDER BY pk;
