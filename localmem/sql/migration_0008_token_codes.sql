-- Schema version 8: token-level evidence (late interaction). Each memory
-- embedded by the store keeps one 1-bit code per token of its text: the
-- sign of each dimension of the token's vector, measured from a token
-- centre (storage/token_codes.py). Recall rescores its candidate pool with
-- them (recall/late_interaction.py); nothing scans this table.
CREATE TABLE token_codes (
    pk     INTEGER PRIMARY KEY REFERENCES memories (pk) ON DELETE CASCADE,
    tokens INTEGER NOT NULL,     -- how many token codes the blob holds
    codes  BLOB NOT NULL         -- tokens x ceil(dims / 8) bytes, bit order little
);

-- The centre the codes are measured from, one row per embedder: fixed the
-- first time that embedder writes token codes to this file, so every code
-- in the file shares it (a new centre would need every text embedded again).
CREATE TABLE token_centre (
    embedder    TEXT PRIMARY KEY,
    dims        INTEGER NOT NULL,
    centre      BLOB NOT NULL,   -- float32 x dims
    measured_at TEXT NOT NULL
);

-- A re-embedding run stages each memory's token codes beside its vector
-- (maintenance/reembed.py); they replace token_codes at the swap.
ALTER TABLE reembed_staging ADD COLUMN tokens INTEGER;
ALTER TABLE reembed_staging ADD COLUMN codes BLOB;
