-- The server no longer has this memory (or never got it): drop it from the map.
DELETE FROM push_ids WHERE remote = :remote AND local_id = :local_id;
