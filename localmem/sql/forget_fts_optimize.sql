-- Merge every segment of the full-text index into one: a deleted row's terms stay in
-- the old segments (the index is contentless) until they are merged away.
INSERT INTO memories_fts (memories_fts) VALUES ('optimize');
