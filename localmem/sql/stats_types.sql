SELECT type, count(*) AS count FROM memories GROUP BY type ORDER BY count DESC, type;
