-- Drop token codes of the wrong shape: recall already ignores them, and the
-- memory keeps its cosine until `localmem reembed` codes it again.
DELETE FROM token_codes
WHERE {{token_codes_malformed}};
