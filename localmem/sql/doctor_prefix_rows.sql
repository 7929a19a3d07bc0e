SELECT pk, prefix FROM memory_tag_prefixes;
