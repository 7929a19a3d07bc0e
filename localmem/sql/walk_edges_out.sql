-- One depth of a bounded walk (storage/walk.py): the (src, dst) of every edge of
-- the given types leaving the frontier's memories; the primary key (src, type,
-- dst) makes it one index seek per memory and type. :limit caps the rows read.
SELECT e.src, e.dst
FROM edges AS e
WHERE e.src IN (SELECT value FROM json_each(:nodes))
  AND e.type IN (SELECT value FROM json_each(:types))
LIMIT :limit;
