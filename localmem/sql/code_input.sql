-- Fragment: the vector vector_codes.sql encodes, by default a bound parameter
-- (padded to a multiple of 8 dimensions by vector_index.code_input).
:code_input
