-- Empty the code index, its deletion log and its calibration (a rebuild follows).
DELETE FROM vector_codes;
DELETE FROM vector_code_deletions;
DELETE FROM vector_calibration;
