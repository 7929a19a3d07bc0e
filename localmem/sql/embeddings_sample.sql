-- The embeddings of the listed pks (a JSON array): a sample for calibration.
SELECT e.pk, e.embedding FROM json_each(:pks) AS j
JOIN memory_embeddings AS e ON e.pk = j.value;
