-- Memories that repeat an older one's exact-duplicate key (storage/dedup_keys.py): the later copies.
SELECT k.pk FROM memory_dedup_keys AS k
WHERE EXISTS (SELECT 1 FROM memory_dedup_keys AS o WHERE o.key = k.key AND o.pk < k.pk);
