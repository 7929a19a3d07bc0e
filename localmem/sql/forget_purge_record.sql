INSERT INTO forget_purges (id, purged_at)
SELECT value, :purged_at FROM json_each(:ids) WHERE true  -- WHERE: the upsert needs it after a SELECT
ON CONFLICT (id) DO UPDATE SET purged_at = excluded.purged_at;
