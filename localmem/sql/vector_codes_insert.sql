-- Write one memory's code (after vector_codes_delete when it replaces one);
-- the triggers count the change.
INSERT INTO vector_codes (pk, seq, ts, codes)
SELECT :pk, clock.seq + 1,
       (SELECT unixepoch(timestamp, 'subsec') FROM memories WHERE pk = :pk),
       {{vector_codes}}
FROM vector_calibration AS cal, vector_clock AS clock;
