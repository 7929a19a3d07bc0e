-- Stamps noted for a batch write and not yet pinned (a process killed in between), a page at a time.
SELECT id, hlc, version, peer FROM sync_pending_pins ORDER BY id LIMIT :limit;
