-- Priority ids fetched directly, still within the recall scope.
SELECT m.* FROM memories AS m
WHERE m.id IN (SELECT value FROM json_each(:ids)) AND {{scope}};
