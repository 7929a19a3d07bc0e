-- Import: the given public ids that `localmem forget` purged, with when (an export made
-- before still holds their text; importing it must not bring them back).
SELECT id, purged_at FROM forget_purges WHERE id IN (SELECT value FROM json_each(:ids));
