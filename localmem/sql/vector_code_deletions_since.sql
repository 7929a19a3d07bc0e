SELECT pk FROM vector_code_deletions WHERE seq > :seq ORDER BY seq;
