-- Tags, prefixes, edges and the embedding copy go by ON DELETE CASCADE;
-- the FTS5 row and the vector code are deleted explicitly (FTS5 has no FKs).
DELETE FROM memories WHERE pk = :pk;
