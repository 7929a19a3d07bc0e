-- Which of the given memories (:pks, a JSON list) Kagura's scope admits.
SELECT m.pk FROM json_each(:pks) AS j
JOIN memories AS m ON m.pk = j.value
WHERE {{kagura_scope_filter}};
