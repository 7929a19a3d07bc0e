-- How many memories pass the other browse filters, by shown state (what a state filter
-- keeps and what it hides).
SELECT {{list_state}} AS state, count(*) FROM memories AS m WHERE {{list_filter}} GROUP BY state;
