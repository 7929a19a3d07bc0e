DELETE FROM meta WHERE key = :key;
