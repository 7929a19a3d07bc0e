-- Export header: what the file will hold, read in the export's own snapshot.
SELECT
    (SELECT count(*) FROM memories) AS memories,
    (SELECT count(*) FROM edges) AS edges,
    (SELECT count(*) FROM memory_embeddings) AS embeddings;
