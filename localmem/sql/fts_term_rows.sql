-- How many memories contain a (stemmed) term, in any column.
SELECT doc FROM memories_fts_terms WHERE term = :term;
