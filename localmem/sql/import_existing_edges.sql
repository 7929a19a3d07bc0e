-- Import: which of the given edges (a JSON array of [memory1_id,
-- relation_type, memory2_id]) already exist; position is the index in it.
SELECT k.key AS position, e.strength, e.updated_at, e.properties
FROM json_each(:edges) AS k
JOIN memories AS a ON a.id = json_extract(k.value, '$[0]')
JOIN memories AS b ON b.id = json_extract(k.value, '$[2]')
JOIN edges AS e ON e.src = a.pk AND e.type = json_extract(k.value, '$[1]') AND e.dst = b.pk;
