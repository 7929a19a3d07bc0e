-- Local memories as push sends them (pull records what the remote has of each).
SELECT m.*, c.seq AS change_seq
FROM memories AS m
JOIN memory_changes AS c ON c.pk = m.pk
WHERE m.id IN (SELECT value FROM json_each(:ids));
