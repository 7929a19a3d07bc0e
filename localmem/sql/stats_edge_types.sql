SELECT type, count(*) AS count FROM edges GROUP BY type ORDER BY count DESC, type;
