-- Migration 0009's backfill: the fields of the key, a page of memories at a time.
SELECT pk, content, context, tags, metadata, timestamp
FROM memories WHERE pk > :after ORDER BY pk LIMIT :limit;
