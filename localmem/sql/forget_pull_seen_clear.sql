-- A purged memory's pulled field hashes go too (as its push hashes: a hash of a short
-- password can be guessed). Its id map row stays, so a pull does not bring it back.
DELETE FROM pull_seen
WHERE EXISTS (SELECT 1 FROM push_ids AS p
              WHERE p.remote = pull_seen.remote AND p.remote_id = pull_seen.remote_id
                AND p.local_id IN (SELECT value FROM json_each(:ids)));
