DELETE FROM vector_codes WHERE pk = :pk;
