-- Whether the id map holds this server memory (for any local memory).
SELECT 1 FROM push_ids WHERE remote = :remote AND remote_id = :remote_id LIMIT 1;
