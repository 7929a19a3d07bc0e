-- Whether any memory has no project tag (tag prefixes are lowercased, one row per memory
-- and prefix): only then is the prompt hook's second recall, over such memories, worth running.
SELECT (SELECT count(*) FROM memories) > (SELECT count(*) FROM memory_tag_prefixes WHERE prefix = 'project');
