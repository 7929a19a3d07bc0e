-- The staged codes into vector_codes in one statement, in the order staged: what
-- vector_codes_insert writes one by one. There each row takes the counter's next value and its
-- trigger moves the counter; here row n of the chunk takes the counter's value before the
-- statement (read once: MATERIALIZED) plus n, while the trigger still moves the counter per row,
-- so the codes, their numbers and the counter end as they would.
WITH base AS MATERIALIZED (SELECT seq FROM vector_clock WHERE id = 1)
INSERT INTO vector_codes (pk, seq, ts, codes)
SELECT s.pk, base.seq + s.n,
       (SELECT unixepoch(m.timestamp, 'subsec') FROM memories AS m WHERE m.pk = s.pk),
       {{vector_codes}}
FROM temp.vector_codes_stage AS s, base, vector_calibration AS cal
ORDER BY s.n;
