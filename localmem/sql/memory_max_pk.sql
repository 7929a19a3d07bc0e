-- An upper bound on the number of memories that costs one index step.
SELECT max(pk) FROM memories;
