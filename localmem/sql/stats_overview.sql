SELECT
    min(timestamp) AS oldest,
    max(timestamp) AS newest,
    sum(archived <> 0) AS archived,
    sum(t_invalid IS NOT NULL) AS invalidated
FROM memories;
