-- What the current-state filter reads of every memory (recall/state.py),
-- and whether it has an outgoing supersession edge at all (else it cannot be
-- superseded, and its chain need not be walked).
SELECT m.id, m.archived, m.t_valid, m.t_invalid,
       EXISTS (SELECT 1 FROM edges AS e
               WHERE e.src = m.pk AND e.type IN ('INVALIDATED_BY', 'EVOLVED_INTO')) AS has_successor
FROM memories AS m;
