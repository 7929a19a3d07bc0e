-- The keys of every memory in scope, as one comma-separated text (cheaper to
-- hand to the in-memory code scan than one row per memory).
SELECT group_concat(m.pk) FROM memories AS m WHERE {{scope}};
