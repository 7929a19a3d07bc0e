-- Public ids of the given integer keys.
SELECT m.pk, m.id FROM memories AS m WHERE m.pk IN (SELECT value FROM json_each(:pks));
