"""Hooks: memory written and read at fixed points of an assistant's session (``localmem hook EVENT``)."""
