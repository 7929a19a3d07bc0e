-- Schema version 19, run before migration_0019_edge_stamps_in_row.sql where the columns are
-- missing (see storage/migrations.py): an edge's change number and clock stamp, in its own row.
ALTER TABLE edges ADD COLUMN seq INTEGER;
ALTER TABLE edges ADD COLUMN hlc TEXT;
