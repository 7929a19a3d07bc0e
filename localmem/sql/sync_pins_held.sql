-- The updated_at of each memory in :ids (a JSON list) still here, to pin a noted stamp on.
SELECT id, updated_at FROM memories WHERE id IN (SELECT value FROM json_each(:ids));
