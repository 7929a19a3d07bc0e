-- One depth of a bounded walk (storage/walk.py), against the edges' direction:
-- (dst, src) of every edge of the given types arriving at the frontier's
-- memories, through edges_dst (dst, type, src). :limit caps the rows read.
SELECT e.dst, e.src
FROM edges AS e
WHERE e.dst IN (SELECT value FROM json_each(:nodes))
  AND e.type IN (SELECT value FROM json_each(:types))
LIMIT :limit;
