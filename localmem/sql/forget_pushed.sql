-- Per push remote, how many of :ids it was sent (the next push deletes them there).
SELECT remote, count(*) FROM push_ids
WHERE local_id IN (SELECT value FROM json_each(:ids)) AND remote_id IS NOT NULL
GROUP BY remote ORDER BY remote;
