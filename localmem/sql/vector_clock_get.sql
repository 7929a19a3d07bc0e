-- The change counter of the codes and the calibration generation, read together.
SELECT clock.seq, clock.rows, coalesce(cal.generation, -1)
FROM vector_clock AS clock LEFT JOIN vector_calibration AS cal ON cal.id = 1
WHERE clock.id = 1;
