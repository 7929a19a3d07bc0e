-- Empty the staging table (vector_code_stage_create) after its rows were inserted.
DELETE FROM temp.vector_code_stage;
