SELECT count(*) FROM vector_codes;
