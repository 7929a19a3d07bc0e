-- Token codes that do not hold :tokens x :width bytes (one bit per dimension per token).
SELECT t.pk, m.id FROM token_codes AS t
LEFT JOIN memories AS m ON m.pk = t.pk
WHERE typeof(t.tokens) <> 'integer' OR t.tokens <= 0 OR typeof(t.codes) <> 'blob'
   OR length(t.codes) <> t.tokens * :width
ORDER BY t.pk;
