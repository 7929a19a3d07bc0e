SELECT m.* FROM memories AS m WHERE m.id IN (SELECT value FROM json_each(:ids));
