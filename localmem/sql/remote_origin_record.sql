-- The server has this memory as :remote_id: where it came from (:origin, 'pulled' or 'pushed')
-- is kept when already known (a pulled memory a push created there again stays pulled).
INSERT INTO remote_origins (remote, local_id, remote_id, origin)
VALUES (:remote, :local_id, :remote_id, :origin)
ON CONFLICT (remote, local_id) DO UPDATE SET remote_id = excluded.remote_id;
