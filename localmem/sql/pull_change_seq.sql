-- The change number of one local memory now (no row: it was deleted), read inside a pull's
-- write transaction to check the memory is still the version the pull decided on.
SELECT c.seq FROM memories AS m JOIN memory_changes AS c ON c.pk = m.pk WHERE m.id = :id;
