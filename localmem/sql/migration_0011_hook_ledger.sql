-- Schema version 11 (hooks): what `localmem hook` remembers between runs.
--
-- hook_injected: the per-session ledger of recall injection; a memory is
-- injected at most once per session (a SessionStart after compaction forgets
-- the session's rows, since the compacted context no longer holds them).
-- hook_captured: one row per transcript message stored by capture, written in
-- the same transaction as the memories, so a hook run twice (or two at once)
-- stores nothing twice. Rows stay when a captured memory is deleted: a
-- forgotten message is not captured again.
-- hook_transcripts: where capture stopped reading a session's transcript, so
-- the next run reads only what was appended (the captured ids still decide).

CREATE TABLE hook_injected (
    session_id  TEXT NOT NULL,
    memory_id   TEXT NOT NULL,
    injected_at TEXT NOT NULL,
    PRIMARY KEY (session_id, memory_id)
) WITHOUT ROWID;

CREATE TABLE hook_captured (
    message_uuid TEXT PRIMARY KEY,
    session_id   TEXT NOT NULL,
    memory_ids   TEXT NOT NULL,
    captured_at  TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX hook_captured_session ON hook_captured (session_id);

CREATE TABLE hook_transcripts (
    session_id TEXT PRIMARY KEY,
    path       TEXT NOT NULL,
    offset     INTEGER NOT NULL,
    updated_at TEXT NOT NULL
) WITHOUT ROWID;
