-- The edges of the memories in :ids (a JSON list) that :keeper held are now written on :receiver.
DELETE FROM sync_owed_edges
WHERE keeper = :keeper AND receiver = :receiver AND id IN (SELECT value FROM json_each(:ids));
