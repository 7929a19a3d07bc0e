-- Memories sent to :remote whose answer was never recorded (a push stopped
-- mid-request), with what is needed to look for them on the server.
SELECT p.local_id AS local_id, p.sent_at AS sent_at, m.pk AS pk, m.content AS content,
       m.timestamp AS timestamp, m.tags AS tags
FROM push_ids AS p
LEFT JOIN memories AS m ON m.id = p.local_id
WHERE p.remote = :remote AND p.remote_id IS NULL
ORDER BY p.local_id;
