-- The first batch of stamps noted and not pinned (a process killed in between).
SELECT batch, peer, pins FROM sync_pending_pins ORDER BY batch LIMIT 1;
