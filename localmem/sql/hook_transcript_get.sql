SELECT path, offset FROM hook_transcripts WHERE session_id = :session_id;
