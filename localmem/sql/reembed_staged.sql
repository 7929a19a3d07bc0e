-- Every memory with the digest of its staged vector (NULL: none staged), to find
-- those whose content changed since it was staged.
SELECT m.pk AS pk, m.content AS content, s.digest AS digest
FROM memories AS m LEFT JOIN reembed_staging AS s ON s.pk = m.pk
ORDER BY m.pk;
