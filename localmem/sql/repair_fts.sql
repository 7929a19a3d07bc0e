-- Rebuild the contentless FTS5 index from memories, thread context included.
INSERT INTO memories_fts (memories_fts) VALUES ('delete-all');
