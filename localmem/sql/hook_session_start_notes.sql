-- Session start's candidates: current memories carrying any of :tags (a JSON list),
-- none of this session's own; decisions, preferences and facts first, then by
-- importance and recency. Bounded by :limit (chit-chat is dropped by the caller).
SELECT m.id AS id, m.content AS content, m.type AS type, m.importance AS importance,
       m.timestamp AS timestamp, m.metadata AS metadata
FROM memories AS m
WHERE m.pk IN (SELECT t.pk FROM memory_tags AS t WHERE t.tag IN (SELECT value FROM json_each(:tags)))
  AND m.pk NOT IN (SELECT t.pk FROM memory_tags AS t WHERE t.tag = :session_tag)
  AND m.archived = 0 AND (m.t_invalid IS NULL OR m.t_invalid > :now)
  AND (m.t_valid IS NULL OR m.t_valid <= :now)
ORDER BY CASE m.type WHEN 'Decision' THEN 0 WHEN 'Preference' THEN 1 WHEN 'Style' THEN 1
                     WHEN 'Pattern' THEN 2 WHEN 'Habit' THEN 2 WHEN 'Insight' THEN 3 ELSE 4 END,
         m.importance DESC, m.timestamp DESC, m.id
LIMIT :limit;
