-- How many memories pass the browse filters (the total over memory_list's pages).
SELECT count(*) FROM memories AS m WHERE {{list_filter}};
