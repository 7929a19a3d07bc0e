-- Browse fragment: the state a memory is shown in (recall/state.py's shown_status):
-- archived, not yet valid, superseded (a supersession edge leads to a current memory:
-- :stuck lists those whose chain does not), expired, else current.
CASE
  WHEN m.archived THEN 'archived'
  WHEN m.t_valid IS NOT NULL AND m.t_valid > :now THEN 'not_yet_valid'
  WHEN EXISTS (SELECT 1 FROM edges AS se
               WHERE se.src = m.pk AND se.type IN ('INVALIDATED_BY', 'EVOLVED_INTO'))
       AND m.id NOT IN (SELECT value FROM json_each(:stuck)) THEN 'superseded'
  WHEN m.t_invalid IS NOT NULL AND m.t_invalid <= :now THEN 'expired'
  ELSE 'current'
END
