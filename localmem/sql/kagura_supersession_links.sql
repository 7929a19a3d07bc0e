-- Supersession edges (either direction) among the given memories (by pk).
SELECT e.src, e.dst FROM edges AS e
WHERE e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO')
  AND e.src IN (SELECT value FROM json_each(:pks))
  AND e.dst IN (SELECT value FROM json_each(:pks));
