-- One new memory row into the staging table (memory_stage_create), its key given.
INSERT INTO temp.memory_stage ({{memory_columns}}) VALUES ({{memory_parameters}});
