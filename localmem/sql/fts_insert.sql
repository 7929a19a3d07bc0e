INSERT INTO memories_fts (rowid, content, tags, prev1, next1, prev2, next2, prev3, next3)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?);
