-- Schema version 3: threads. Memories that share a thread (metadata.thread /
-- metadata.session, or a thread: / session: tag) are indexed together with
-- the text of their neighbours, as extra, lower-weighted FTS5 columns.
ALTER TABLE memories ADD COLUMN thread TEXT;
CREATE INDEX memories_thread ON memories (thread, timestamp, pk) WHERE thread IS NOT NULL;

DROP TABLE memories_fts;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content, tags, prev1, next1, prev2, next2, prev3, next3,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
-- Document frequencies per stemmed term, for keyword-score normalisation.
CREATE VIRTUAL TABLE memories_fts_terms USING fts5vocab (memories_fts, 'row');
