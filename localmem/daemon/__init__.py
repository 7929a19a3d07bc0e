"""The warm process's client side: where its socket lives, how to talk to it, how to start it.

Standard library only: the hook client imports this on every prompt. The
process itself (``localmem daemon run``) is ``localmem.daemon_server``.
"""
