-- The memories in :ids (a JSON list of ids), each with the clock stamp of its last change.
SELECT m.*, c.hlc AS hlc,
       (SELECT json_group_array(json_array(v.replica, v.hlc)) FROM (SELECT replica, hlc FROM sync_seen AS s
        WHERE s.id = m.id ORDER BY replica = 'floor' DESC, hlc DESC LIMIT 17) AS v) AS seen
FROM memories AS m LEFT JOIN memory_changes AS c ON c.pk = m.pk
WHERE m.id IN (SELECT value FROM json_each(:ids));
