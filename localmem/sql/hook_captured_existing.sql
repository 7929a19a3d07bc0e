-- The message uuids (of a JSON list) that capture already stored.
SELECT message_uuid FROM hook_captured WHERE message_uuid IN (SELECT value FROM json_each(:uuids));
