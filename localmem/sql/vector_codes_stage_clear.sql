-- Empty the staging table (vector_codes_stage_create) after its rows were inserted.
DELETE FROM temp.vector_codes_stage;
