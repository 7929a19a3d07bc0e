-- The change counter of the codes and the calibration generation, read together,
-- with the token a restore writes (maintenance/backup.py): a restore takes the
-- counter back, and later writes can bring it to a value a cache has seen.
SELECT clock.seq, clock.rows, coalesce(cal.generation, -1),
       (SELECT value FROM meta WHERE key = 'restore_token')
FROM vector_clock AS clock LEFT JOIN vector_calibration AS cal ON cal.id = 1
WHERE clock.id = 1;
