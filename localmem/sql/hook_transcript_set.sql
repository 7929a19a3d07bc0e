-- Where capture stopped reading. A slower concurrent run never moves it backwards
-- for the same file; :restarted = 1 (the file shrank or was replaced) sets it as given.
-- A negative offset is a place inside a line too long to keep (transcript.py): compared by size.
INSERT INTO hook_transcripts (session_id, path, offset, updated_at)
VALUES (:session_id, :path, :offset, :now)
ON CONFLICT (session_id) DO UPDATE SET
    offset = CASE WHEN :restarted = 0 AND hook_transcripts.path = excluded.path
                  AND abs(hook_transcripts.offset) > abs(excluded.offset)
                  THEN hook_transcripts.offset ELSE excluded.offset END,
    path = excluded.path,
    updated_at = excluded.updated_at;
