-- The server has this memory as :remote_id, in the version :pushed_seq.
INSERT INTO push_ids (remote, local_id, remote_id, pushed_seq, fields, sent_at)
VALUES (:remote, :local_id, :remote_id, :pushed_seq, :fields, NULL)
ON CONFLICT (remote, local_id) DO UPDATE SET
    remote_id = excluded.remote_id, pushed_seq = excluded.pushed_seq,
    fields = excluded.fields, sent_at = NULL;
