-- A compacted session no longer holds what was injected into it.
DELETE FROM hook_injected WHERE session_id = :session_id;
