-- Scope fragment (alias m = memories): never archived memories or excluded types.
m.archived = 0 AND m.type NOT IN (SELECT value FROM json_each(:excluded_types))
