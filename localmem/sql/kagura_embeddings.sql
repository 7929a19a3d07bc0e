SELECT e.pk, e.embedding FROM memory_embeddings AS e WHERE e.pk IN (SELECT value FROM json_each(:pks));
