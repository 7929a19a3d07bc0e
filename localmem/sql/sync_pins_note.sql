-- Before a batch write: the stamp each new record carries (:pins, a JSON list of
-- [id, stamp, updated_at]) from :peer, to pin once the batch is written (its number: the rowid).
INSERT INTO sync_pending_pins (peer, pins) VALUES (:peer, :pins);
