UPDATE vector_codes
SET ts = (SELECT unixepoch(timestamp, 'subsec') FROM memories WHERE pk = :pk),
    seq = (SELECT seq + 1 FROM vector_clock WHERE id = 1)
WHERE pk = :pk;
