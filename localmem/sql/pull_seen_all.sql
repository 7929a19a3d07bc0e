-- What the last pulls took of each memory of :remote (a hash per field).
SELECT remote_id, fields FROM pull_seen WHERE remote = :remote;
