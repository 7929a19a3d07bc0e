-- A memory gone from :remote.
DELETE FROM pull_seen WHERE remote = :remote AND remote_id = :remote_id;
