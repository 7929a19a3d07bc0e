-- Whether the id map holds this server memory (for any local memory but :besides, when given).
SELECT 1 FROM push_ids WHERE remote = :remote AND remote_id = :remote_id AND local_id IS NOT :besides LIMIT 1;
