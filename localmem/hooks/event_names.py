"""The hook events localmem answers, in a module of constants only.

The hook client (which imports only the standard library) and the answering
code both read these, so an event neither knows is refused before the store
is opened, and the two lists cannot drift apart.
"""

from __future__ import annotations

__all__ = ["CAPTURE_EVENTS", "EVENTS", "INJECT_EVENTS"]

INJECT_EVENTS = ("SessionStart", "UserPromptSubmit")  # answered with notes; the client waits for them
CAPTURE_EVENTS = ("PreCompact", "Stop", "SubagentStop", "SessionEnd")  # read the transcript, store turns
EVENTS = INJECT_EVENTS + CAPTURE_EVENTS
