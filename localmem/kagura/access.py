"""Which contexts the current caller may see.

The HTTP layer runs ``store.recall_v1`` inside ``restrict_contexts(...)``
for a token scoped to some contexts; a Python caller can do the same. The
restriction lives in a context variable, not in a request field, so a
request body can never widen it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_VISIBLE: ContextVar[frozenset[str] | None] = ContextVar("localmem_visible_contexts", default=None)


def visible_contexts() -> frozenset[str] | None:
    """The contexts the caller may see; None means every context."""
    return _VISIBLE.get()


@contextmanager
def restrict_contexts(contexts: Iterable[str] | None) -> Iterator[None]:
    """Within the block, recall_v1 sees only ``contexts`` (None: no restriction).

    Nested restrictions intersect: an inner block can narrow, never widen.
    """
    outer = _VISIBLE.get()
    if contexts is None:
        allowed = outer
    else:
        allowed = frozenset(contexts)
        if outer is not None:
            allowed = allowed & outer
    token = _VISIBLE.set(allowed)
    try:
        yield
    finally:
        _VISIBLE.reset(token)
