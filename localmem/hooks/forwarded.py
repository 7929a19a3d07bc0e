"""A hook forwarded by ``localmem hook`` to a process with a warm store (``localmem serve``'s
``POST /hooks/{event}``, or the warm process's socket): the hook's payload and its own
``LOCALMEM_HOOK_*`` settings in, ``answer_hook``'s answer out, so a forwarded answer is the one
the hook would give in-process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ValidationError
from .events import HookAnswer, answer_hook_with_report
from .settings import HookSettings

if TYPE_CHECKING:
    from ..store import MemoryStore

__all__ = ["MAX_SETTINGS", "SETTINGS_PREFIX", "answer_forwarded"]

MAX_SETTINGS = 64
SETTINGS_PREFIX = "LOCALMEM_HOOK_"  # as the hook client sends them


def answer_forwarded(store: "MemoryStore", event: str, payload: object, environment: object) -> HookAnswer:
    """The answer and what was done (the hook prints the report under ``-v``); ``ValidationError`` naming the field for a payload that is not an object or settings that
    are not at most ``MAX_SETTINGS`` ``LOCALMEM_HOOK_*`` strings."""
    if not isinstance(payload, dict):
        raise ValidationError("'payload' must be the hook's JSON object")
    if (not isinstance(environment, dict) or len(environment) > MAX_SETTINGS
            or not all(isinstance(k, str) and k.startswith(SETTINGS_PREFIX) and isinstance(v, str)
                       for k, v in environment.items())):
        raise ValidationError(f"'settings' must map at most {MAX_SETTINGS} {SETTINGS_PREFIX}* names to strings")
    return answer_hook_with_report(store, event, payload, HookSettings.from_env(environment))
