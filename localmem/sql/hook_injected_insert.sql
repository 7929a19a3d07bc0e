INSERT OR IGNORE INTO hook_injected (session_id, memory_id, injected_at)
VALUES (:session_id, :memory_id, :now);
