DELETE FROM reembed_staging;
