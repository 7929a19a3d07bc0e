UPDATE memories SET last_accessed = :now WHERE id IN (SELECT value FROM json_each(:ids));
