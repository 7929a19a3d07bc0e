SELECT (SELECT count(*) FROM memories) AS total,
       (SELECT count(*) FROM reembed_staging AS s WHERE EXISTS (SELECT 1 FROM memories AS m WHERE m.pk = s.pk)) AS staged;
