-- Memories a sync copies keep the stamps they were written with on the other store
-- (:stamps, a JSON list of [id, stamp]).
UPDATE memory_changes SET hlc = s.value ->> '$[1]'
FROM json_each(:stamps) AS s JOIN memories AS m ON m.id = s.value ->> '$[0]'
WHERE memory_changes.pk = m.pk;
