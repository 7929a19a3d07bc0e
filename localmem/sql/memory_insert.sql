-- One memory row, its key given: a batch's keys are assigned up front
-- (one past the largest, as SQLite would), so one executemany writes them all.
INSERT INTO memories ({{memory_columns}}) VALUES ({{memory_parameters}});
