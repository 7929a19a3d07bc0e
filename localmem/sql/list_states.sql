-- Browse fragment: the memory's shown state (list_state) is one of :states.
({{list_state}}) IN (SELECT value FROM json_each(:states))
