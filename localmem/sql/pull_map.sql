-- The id map of :remote, both ways, with whether each local memory still
-- exists and has changed since the remote got (or gave) this version, and where it
-- came from (origin: pulled from :remote, or pushed there; remote_origins).
SELECT p.local_id AS local_id, p.remote_id AS remote_id, p.pushed_seq AS pushed_seq,
       p.fields AS fields, c.seq AS change_seq, m.id IS NOT NULL AS present,
       o.origin AS origin
FROM push_ids AS p
LEFT JOIN memories AS m ON m.id = p.local_id
LEFT JOIN memory_changes AS c ON c.pk = m.pk
LEFT JOIN remote_origins AS o ON o.remote = p.remote AND o.local_id = p.local_id
WHERE p.remote = :remote AND p.remote_id IS NOT NULL;
