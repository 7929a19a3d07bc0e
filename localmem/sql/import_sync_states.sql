-- Import: for each of the given public ids (:ids, a JSON list), the clock stamp of the version
-- held here (NULL: none held) and whether this store holds a deletion of it (maintenance/import_stamps.py).
SELECT i.value AS id, c.hlc AS hlc, EXISTS (SELECT 1 FROM sync_tombstones AS t WHERE t.id = i.value) AS deleted
FROM json_each(:ids) AS i
LEFT JOIN memories AS m ON m.id = i.value
LEFT JOIN memory_changes AS c ON c.pk = m.pk;
