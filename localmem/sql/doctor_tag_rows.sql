SELECT pk, tag FROM memory_tags;
