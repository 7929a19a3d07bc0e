-- Which of :ids (local ids) were deleted here: a delete leaves a sync tombstone under the id.
SELECT id FROM sync_tombstones WHERE id IN (SELECT value FROM json_each(:ids));
