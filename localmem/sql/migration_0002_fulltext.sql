-- Schema version 2: the FTS5 keyword index over content and tags,
-- contentless (the text lives in memories), rowid = memories.pk.
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    content, tags,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Backfill from memories written before this version.
INSERT INTO memories_fts (rowid, content, tags)
SELECT m.pk, m.content,
       coalesce((SELECT group_concat(j.value, ' ') FROM json_each(m.tags) AS j), '')
FROM memories AS m;
