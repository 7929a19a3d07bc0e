-- A purged memory's field hashes go too (a hash of a short password can be guessed);
-- its remote id stays, so the next push deletes it on the server.
UPDATE push_ids SET fields = '{}' WHERE local_id IN (SELECT value FROM json_each(:ids));
