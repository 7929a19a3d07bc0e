-- Fragment: the 3-bit thermometer code of {{code_input}} (a float32 vector padded
-- to a multiple of 8 dimensions): for each dimension, x > -t, x > 0, x > t
-- with t = 0.7 / sqrt(dims) (:code_low = -t, :code_high = t per dimension).
-- Hamming distance between codes approximates the L1 distance of the vectors
-- quantised to four levels: a cheap first pass for the cosine kNN.
vec_bit(CAST(vec_quantize_binary(vec_sub({{code_input}}, :code_low))
             || vec_quantize_binary({{code_input}})
             || vec_quantize_binary(vec_sub({{code_input}}, :code_high)) AS BLOB))
