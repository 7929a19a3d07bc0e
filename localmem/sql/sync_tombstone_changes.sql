-- Memories deleted after :since (and not after :until), by change number, a page at a time.
SELECT id, deleted_at, seq AS change_seq
FROM sync_tombstones
WHERE seq > :since AND seq <= :until
ORDER BY seq
LIMIT :limit;
