-- The memories already injected into a session, among the given ids (a JSON list).
SELECT memory_id FROM hook_injected
WHERE session_id = :session_id AND memory_id IN (SELECT value FROM json_each(:ids));
