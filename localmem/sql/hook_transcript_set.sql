-- Where capture stopped reading. A slower concurrent run never moves it backwards
-- for the same file; :restarted = 1 (the file shrank or was replaced) sets it as given.
INSERT INTO hook_transcripts (session_id, path, offset, updated_at)
VALUES (:session_id, :path, :offset, :now)
ON CONFLICT (session_id) DO UPDATE SET
    offset = CASE WHEN :restarted = 0 AND hook_transcripts.path = excluded.path
                  THEN max(hook_transcripts.offset, excluded.offset) ELSE excluded.offset END,
    path = excluded.path,
    updated_at = excluded.updated_at;
