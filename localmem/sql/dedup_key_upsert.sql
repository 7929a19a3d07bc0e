-- A memory's exact-duplicate key (storage/dedup_keys.py), written or replaced.
INSERT INTO memory_dedup_keys (pk, key) VALUES (:pk, :key)
ON CONFLICT (pk) DO UPDATE SET key = excluded.key;
