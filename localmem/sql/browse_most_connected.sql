-- The memories with the most edges (in and out, any type), most first.
WITH degrees (pk, degree) AS (
    SELECT pk, sum(n) FROM (
        SELECT src AS pk, count(*) AS n FROM edges GROUP BY src
        UNION ALL
        SELECT dst AS pk, count(*) AS n FROM edges GROUP BY dst
    ) GROUP BY pk
)
SELECT d.degree AS degree, m.*
FROM degrees AS d
CROSS JOIN memories AS m ON m.pk = d.pk
ORDER BY d.degree DESC, m.timestamp DESC
LIMIT :limit;
