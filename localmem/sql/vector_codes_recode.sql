-- Re-encode one code under the current calibration (the trigger counts it).
UPDATE vector_codes
SET codes = (SELECT {{vector_codes}} FROM vector_calibration AS cal),
    seq = (SELECT seq + 1 FROM vector_clock WHERE id = 1)
WHERE pk = :pk;
