-- Token codes of the wrong shape (token_codes_malformed.sql), with their memory ids.
SELECT t.pk, m.id FROM token_codes AS t
LEFT JOIN memories AS m ON m.pk = t.pk
WHERE {{token_codes_malformed}}
ORDER BY t.pk;
