-- Token codes of the candidates named in :ids (a JSON array of memory ids).
SELECT m.id, t.tokens, t.codes
FROM json_each(:ids) AS j
JOIN memories AS m ON m.id = j.value
JOIN token_codes AS t ON t.pk = m.pk;
