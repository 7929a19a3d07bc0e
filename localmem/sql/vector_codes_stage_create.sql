-- A connection's private staging table for a batch of new vector codes (storage/staged_rows.py):
-- n numbers a chunk's rows from 1 in the order they are written.
CREATE TEMP TABLE IF NOT EXISTS vector_codes_stage (n INTEGER PRIMARY KEY, pk, code_input);
