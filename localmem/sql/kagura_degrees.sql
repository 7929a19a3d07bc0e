-- Degree (edges of any type, either direction) of the given memories,
-- counting only neighbours in the context(s) that are not archived.
SELECT s.id AS id,
       (SELECT count(*) FROM edges AS e JOIN memories AS o ON o.pk = e.dst
        WHERE e.src = s.pk AND o.archived = 0
          AND (:contexts IS NULL OR o.context IN (SELECT value FROM json_each(:contexts))))
     + (SELECT count(*) FROM edges AS e JOIN memories AS o ON o.pk = e.src
        WHERE e.dst = s.pk AND o.archived = 0
          AND (:contexts IS NULL OR o.context IN (SELECT value FROM json_each(:contexts))))
       AS degree
FROM memories AS s
WHERE s.id IN (SELECT value FROM json_each(:ids));
