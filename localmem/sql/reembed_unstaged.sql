-- Memories without a staged vector yet, in key order, a batch at a time.
SELECT m.pk AS pk, m.content AS content FROM memories AS m
WHERE m.pk > :after AND NOT EXISTS (SELECT 1 FROM reembed_staging AS s WHERE s.pk = m.pk)
ORDER BY m.pk
LIMIT :limit;
