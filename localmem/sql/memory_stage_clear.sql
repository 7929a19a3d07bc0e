-- Empty the staging table (memory_stage_create) after its rows were inserted.
DELETE FROM temp.memory_stage;
