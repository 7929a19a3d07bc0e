-- Browse fragment: the memory type is one of :types.
m.type IN (SELECT value FROM json_each(:types))
