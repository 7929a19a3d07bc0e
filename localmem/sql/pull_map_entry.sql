-- One memory of :remote's id map, as pull_map gives it (a pull reading it again after a
-- compare-and-set found the local memory changed).
SELECT p.local_id AS local_id, p.remote_id AS remote_id, p.pushed_seq AS pushed_seq,
       p.fields AS fields, c.seq AS change_seq, m.id IS NOT NULL AS present,
       o.origin AS origin
FROM push_ids AS p
LEFT JOIN memories AS m ON m.id = p.local_id
LEFT JOIN memory_changes AS c ON c.pk = m.pk
LEFT JOIN remote_origins AS o ON o.remote = p.remote AND o.local_id = p.local_id
WHERE p.remote = :remote AND p.remote_id = :remote_id;
