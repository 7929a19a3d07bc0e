-- Token codes (columns tokens, codes of token_codes) that do not hold
-- tokens x :width bytes, one bit per dimension per token: recall ignores them.
typeof(tokens) <> 'integer' OR tokens <= 0 OR typeof(codes) <> 'blob' OR length(codes) <> tokens * :width
