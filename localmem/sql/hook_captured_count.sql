SELECT count(*) FROM hook_captured WHERE session_id = :session_id;
