-- The source of the tag and prefix rows: each memory's tags JSON.
SELECT pk, id, tags FROM memories ORDER BY pk;
