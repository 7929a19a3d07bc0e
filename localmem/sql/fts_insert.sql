INSERT INTO memories_fts (rowid, content, tags) VALUES (:pk, :content, :tags);
