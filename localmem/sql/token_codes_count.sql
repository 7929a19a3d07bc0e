SELECT count(*), coalesce(sum(tokens), 0), coalesce(sum(length(codes)), 0) FROM token_codes;
