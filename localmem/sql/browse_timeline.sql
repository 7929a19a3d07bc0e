-- How many memories were made on each day (UTC date of the stored timestamp), oldest first.
SELECT substr(timestamp, 1, 10) AS day, count(*) AS count
FROM memories
GROUP BY day
ORDER BY day;
