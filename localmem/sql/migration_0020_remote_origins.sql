-- Schema version 20: where each memory a push or pull server has came from.
--
-- Per server and local memory: whether it was pulled from that server or written here and
-- pushed there, and the server's id it has there now. A pull deletes here only what came from
-- the server; the id map (push_ids) cannot keep that, since a pulled memory the server deleted
-- and a push created there again is mapped to a new server id, which no longer derives its
-- local id. The row outlives its map row (a memory gone from the server and kept here), so the
-- next push that creates it there again keeps its origin, under the new id.

CREATE TABLE IF NOT EXISTS remote_origins (
    remote    TEXT NOT NULL REFERENCES push_remotes (remote) ON DELETE CASCADE,
    local_id  TEXT NOT NULL,
    remote_id TEXT NOT NULL,
    origin    TEXT NOT NULL CHECK (origin IN ('pulled', 'pushed')),
    PRIMARY KEY (remote, local_id)
) WITHOUT ROWID;

-- What the id map already knows: a pulled memory's local id derives from the server's id it was
-- pulled under (localmem_pulled_id, registered by the migration); any other mapped one was pushed.
-- An origin already recorded (the step run again on a file set back a version) is kept.
INSERT INTO remote_origins (remote, local_id, remote_id, origin)
SELECT remote, local_id, remote_id,
       CASE WHEN local_id = localmem_pulled_id(remote, remote_id) THEN 'pulled' ELSE 'pushed' END
FROM push_ids
WHERE remote_id IS NOT NULL
ON CONFLICT (remote, local_id) DO NOTHING;
