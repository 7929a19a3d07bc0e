-- Before a create is sent: the memories are marked as sent, answer unknown.
INSERT INTO push_ids (remote, local_id, remote_id, pushed_seq, fields, sent_at)
SELECT :remote, value, NULL, 0, '{}', :now FROM json_each(:ids) WHERE true
ON CONFLICT (remote, local_id) DO UPDATE SET sent_at = excluded.sent_at;
