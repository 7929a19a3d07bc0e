-- Of some local memories the server lacks, those it had before (a remote_origins row outlives its
-- map row): with the server's id they had there.
SELECT local_id, remote_id FROM remote_origins
WHERE remote = :remote AND local_id IN (SELECT value FROM json_each(:ids));
