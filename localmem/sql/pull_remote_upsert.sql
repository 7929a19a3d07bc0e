-- Register a server pulled from (or note another pull from it).
INSERT INTO pull_remotes (remote, first_pull, last_pull, last_complete, remote_count)
VALUES (:remote, :now, :now, :complete, :count)
ON CONFLICT (remote) DO UPDATE SET
    last_pull = excluded.last_pull,
    last_complete = coalesce(excluded.last_complete, pull_remotes.last_complete),
    remote_count = excluded.remote_count;
