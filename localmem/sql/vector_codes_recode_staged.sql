-- The staged codes re-encoded under the current calibration in one statement: what
-- vector_codes_recode does one by one. There each code takes the counter's next value and the
-- update trigger moves the counter; here row n of the chunk takes the counter's value before the
-- statement (read once: MATERIALIZED) plus n, and the trigger still moves it once per code.
WITH base AS MATERIALIZED (SELECT seq FROM vector_clock WHERE id = 1)
UPDATE vector_codes
SET codes = {{vector_codes}}, seq = base.seq + s.n
FROM temp.vector_codes_stage AS s, base, vector_calibration AS cal
WHERE vector_codes.pk = s.pk;
