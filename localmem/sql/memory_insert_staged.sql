-- The staged memory rows into memories in one statement, in key order (the staging table's
-- rowid): the rows memory_insert would write one by one, and their insert triggers run per row.
INSERT INTO main.memories ({{memory_columns}})
SELECT {{memory_columns}} FROM temp.memory_stage ORDER BY pk;
