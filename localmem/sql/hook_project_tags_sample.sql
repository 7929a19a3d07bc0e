-- Some project tags the store holds (for saying why a folder matched none), in tag order.
SELECT DISTINCT tag FROM memory_tags WHERE tag >= 'project:' AND tag < 'project;' LIMIT :limit;
