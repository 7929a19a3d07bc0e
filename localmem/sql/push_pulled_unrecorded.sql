-- Memories of :remote a pull began to write but has not recorded in the id map (it was stopped
-- between the two; noted with a 'pending' key): their local ids derive from these remote ids, and a push
-- must not send them back.
SELECT s.remote_id AS remote_id FROM pull_seen AS s
WHERE s.remote = :remote AND s.fields ->> '$.pending' IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM push_ids AS p WHERE p.remote = s.remote AND p.remote_id = s.remote_id);
