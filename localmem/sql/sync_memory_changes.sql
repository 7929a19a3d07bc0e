-- Memories changed after :since (and not after :until), by change number, a page at a time.
SELECT c.seq AS change_seq, m.*
FROM memory_changes AS c JOIN memories AS m ON m.pk = c.pk
WHERE c.seq > :since AND c.seq <= :until
ORDER BY c.seq
LIMIT :limit;
