-- Fragment: the key a scope's tag test reads, unless the statement names another
-- (an FTS5 search passes +f.rowid; recall/scope.py says why).
m.pk
