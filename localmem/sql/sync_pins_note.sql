-- Before a batch write: the stamp each new record carries (:pins, a JSON list of
-- [id, stamp, version]) from :peer, to pin once the batch is written.
INSERT INTO sync_pending_pins (id, hlc, version, peer)
SELECT p.value ->> '$[0]', p.value ->> '$[1]', p.value ->> '$[2]', :peer FROM json_each(:pins) AS p WHERE true
ON CONFLICT (id) DO UPDATE SET hlc = excluded.hlc, version = excluded.version, peer = excluded.peer;
