-- Tags, prefixes, edges and the embedding copy go by ON DELETE CASCADE;
-- the FTS5 and vec0 rows are deleted explicitly (virtual tables have no FKs).
DELETE FROM memories WHERE pk = :pk;
