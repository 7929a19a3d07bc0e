-- Push's --tags: memories with any of the tags, as whole tags or as segment prefixes.
AND m.pk IN (SELECT p.pk FROM memory_tag_prefixes AS p WHERE p.prefix IN (SELECT value FROM json_each(:tags)))
