-- Which of the given public ids already exist.
SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(:ids));
