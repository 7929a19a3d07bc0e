DELETE FROM sync_pending_pins WHERE id IN (SELECT value FROM json_each(:ids));
