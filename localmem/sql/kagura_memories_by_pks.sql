SELECT m.* FROM memories AS m WHERE m.pk IN (SELECT value FROM json_each(:pks));
