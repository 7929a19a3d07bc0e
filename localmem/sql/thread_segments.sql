-- Fragment (after a `targets (pk, thread)` CTE): the memories of the targets'
-- threads within [:band_start, :band_end] (NULL = unbounded), in thread order
-- (timestamp, then pk), cut into segments wherever consecutive memories are
-- more than :max_gap_days apart.
threaded AS (
    SELECT m.pk, m.thread, m.timestamp, m.content
    FROM memories AS m
    WHERE m.thread IN (SELECT thread FROM targets WHERE thread IS NOT NULL)
      AND (:band_start IS NULL OR m.timestamp >= :band_start)
      AND (:band_end IS NULL OR m.timestamp <= :band_end)
),
flagged AS (
    SELECT t.*,
           CASE WHEN julianday(t.timestamp) - julianday(lag(t.timestamp) OVER (
                    PARTITION BY t.thread ORDER BY t.timestamp, t.pk)) > :max_gap_days
                THEN 1 ELSE 0 END AS gap
    FROM threaded AS t
),
segmented AS (
    SELECT f.*, sum(f.gap) OVER (PARTITION BY f.thread ORDER BY f.timestamp, f.pk
                                 ROWS UNBOUNDED PRECEDING) AS segment
    FROM flagged AS f
)
