-- One new code's input into the staging table (vector_codes_stage_create); n is the rowid
-- SQLite gives it: 1 for the first row of an empty table, then one more each row.
INSERT INTO temp.vector_codes_stage (pk, code_input) VALUES (:pk, :code_input);
