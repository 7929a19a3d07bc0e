DELETE FROM token_codes WHERE pk = :pk;
