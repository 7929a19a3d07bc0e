"""The warm process (``localmem daemon run``): one per user and store, on a Unix socket.

``process`` owns the lock, the socket, the connections and the idle exit;
``answers`` answers each request with the code the other interfaces use
(the hook route's ``answer_forwarded``, the CLI's commands, the MCP tools),
so a forwarded answer is the one given in-process.
"""
