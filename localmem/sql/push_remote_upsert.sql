-- Register a server pushed to (or note another push to it).
INSERT INTO push_remotes (remote, kind, first_push, last_push)
VALUES (:remote, :kind, :now, :now)
ON CONFLICT (remote) DO UPDATE SET kind = excluded.kind, last_push = excluded.last_push;
