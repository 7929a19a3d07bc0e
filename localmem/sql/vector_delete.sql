-- vec0 has no upsert (INSERT OR REPLACE fails in 0.1.9): delete, then insert.
DELETE FROM memory_vectors WHERE pk = :pk;
