-- vec0 has no upsert (INSERT OR REPLACE fails in 0.1.9): delete, then insert.
DELETE FROM memory_vector_codes WHERE pk = :pk;
