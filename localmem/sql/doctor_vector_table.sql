-- 1 when the code index tables exist (the calibration row is checked after).
SELECT count(*) = 2 FROM sqlite_master
WHERE type = 'table' AND name IN ('vector_codes', 'vector_calibration');
