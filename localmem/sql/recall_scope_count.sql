-- How many memories the scope admits (for keyword statistics of the scope).
SELECT count(*) FROM memories AS m WHERE {{scope}};
