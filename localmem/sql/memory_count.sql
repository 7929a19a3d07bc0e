SELECT count(*) FROM memories;
