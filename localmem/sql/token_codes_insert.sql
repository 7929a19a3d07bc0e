-- A memory's token codes, written or replaced.
INSERT INTO token_codes (pk, tokens, codes) VALUES (:pk, :tokens, :codes)
ON CONFLICT (pk) DO UPDATE SET tokens = excluded.tokens, codes = excluded.codes;
