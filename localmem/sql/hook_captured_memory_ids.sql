-- A claimed message's memories, once written: a part deduplicated to a stored memory is held by that one.
UPDATE hook_captured SET memory_ids = :memory_ids WHERE message_uuid = :message_uuid;
