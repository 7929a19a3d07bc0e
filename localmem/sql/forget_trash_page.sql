-- The trash, a page at a time by id (forget --matching, --secrets and ids look in it too).
SELECT id, record FROM trash WHERE id > :after ORDER BY id LIMIT :limit;
