-- The embedder and dimension the file records (a reembed by another process changes them).
SELECT (SELECT value FROM meta WHERE key = 'embedder') AS embedder,
       (SELECT value FROM meta WHERE key = 'dimensions') AS dimensions;
