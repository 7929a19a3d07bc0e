-- Schema version 10: the state of `localmem pull`, per remote server.
--
-- The id map itself is push's (push_ids, push_edges): a memory pulled from a
-- server is recorded there as one the server has, so a push after a pull sends
-- nothing back and a pull after a push takes nothing twice. What pull adds is
-- what it last took from each remote memory, a hash per field, so the next
-- pull applies only the fields that changed there since.

CREATE TABLE pull_remotes (
    remote        TEXT PRIMARY KEY,
    first_pull    TEXT NOT NULL,
    last_pull     TEXT,
    last_complete TEXT,           -- last pull that saw the server's whole listing
    remote_count  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- remote_id: the server's id; fields: {field: hash} of the values last taken.
CREATE TABLE pull_seen (
    remote    TEXT NOT NULL REFERENCES pull_remotes (remote) ON DELETE CASCADE,
    remote_id TEXT NOT NULL,
    fields    TEXT NOT NULL,
    PRIMARY KEY (remote, remote_id)
) WITHOUT ROWID;
