-- Import: the given public ids that were forgotten, with when: by `localmem forget` here, or
-- on another store whose purge a sync carried here (the tombstone marked purged). An export
-- made before still holds their text; importing it must not bring them back.
SELECT id, purged_at FROM forget_purges WHERE id IN (SELECT value FROM json_each(:ids))
UNION ALL
SELECT id, deleted_at FROM sync_tombstones
WHERE purged = 1 AND id IN (SELECT value FROM json_each(:ids)) AND id NOT IN (SELECT id FROM forget_purges);
