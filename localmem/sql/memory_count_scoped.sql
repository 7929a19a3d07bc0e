-- Memories in push's scope (--tags), for --verify.
SELECT count(*) FROM memories AS m WHERE 1 {{scope}};
