-- The memories in :ids (a JSON list of ids), each with the clock stamp of its last change.
SELECT m.*, c.hlc AS hlc
FROM memories AS m LEFT JOIN memory_changes AS c ON c.pk = m.pk
WHERE m.id IN (SELECT value FROM json_each(:ids));
