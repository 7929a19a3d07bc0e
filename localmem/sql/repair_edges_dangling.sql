DELETE FROM edges
WHERE src NOT IN (SELECT pk FROM memories) OR dst NOT IN (SELECT pk FROM memories);
