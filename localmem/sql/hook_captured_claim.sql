-- Claims a message for this run; changes() is 0 when another run stored it first.
INSERT OR IGNORE INTO hook_captured (message_uuid, session_id, memory_ids, captured_at)
VALUES (:message_uuid, :session_id, :memory_ids, :now);
