-- One re-encoded code's input into the staging table (vector_codes_stage_create), only when the
-- memory has a code to re-encode: the rows staged are numbered as the codes are changed.
INSERT INTO temp.vector_codes_stage (pk, code_input)
SELECT :pk, :code_input WHERE EXISTS (SELECT 1 FROM vector_codes WHERE pk = :pk);
