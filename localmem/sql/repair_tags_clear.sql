-- Tag and prefix rows are derived from memories.tags; cleared, then refilled.
DELETE FROM memory_tags;
DELETE FROM memory_tag_prefixes;
