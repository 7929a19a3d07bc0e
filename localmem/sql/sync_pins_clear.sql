DELETE FROM sync_pending_pins WHERE batch = :batch;
