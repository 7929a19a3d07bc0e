-- Fragment: the 3-bit code of {{code_input}} (a float32 vector padded to a
-- multiple of 8 dimensions) under the store's calibration `cal`: for each
-- dimension x > low, x > mid, x > high, as three bit strings one after the
-- other. Hamming distance between codes approximates the L1 distance of the
-- vectors quantised to four levels; the middle third alone is a 1-bit code.
CAST(vec_quantize_binary(vec_sub({{code_input}}, cal.low))
     || vec_quantize_binary(vec_sub({{code_input}}, cal.mid))
     || vec_quantize_binary(vec_sub({{code_input}}, cal.high)) AS BLOB)
