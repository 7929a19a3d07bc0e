"""No mass deletion without being asked: the one rule sync and pull share.

A sync or pull counts the local deletions it would make before it writes
anything. More than ``allowance`` of them (a small share of the store) stops
the run with an error naming the count; ``--allow-deletes N`` lets up to N
through. A peer or server that lost its data, or lies, then costs nothing.
"""

from __future__ import annotations

from ..errors import LocalMemError

SMALL_SHARE = 0.05  # of the store's memories
ALWAYS_ALLOWED = 3  # a few deletions are ordinary, in a store of any size


class TooManyDeletions(LocalMemError):
    """A run would delete more than it may without ``--allow-deletes``; nothing was written."""


def allowance(total: int) -> int:
    """How many deletions a run may make in a store of ``total`` memories without being asked."""
    return max(ALWAYS_ALLOWED, int(total * SMALL_SHARE))


def check_deletions(planned: int, total: int, allow: int | None, where: str) -> None:
    """Raise ``TooManyDeletions`` when ``planned`` deletions in ``where`` (holding ``total``)
    exceed both the allowance and ``allow`` (the user's ``--allow-deletes``)."""
    limit = max(allowance(total), allow or 0)
    if planned > limit:
        raise TooManyDeletions(
            f"this run would delete {planned} of the {total} memories in {where}, more than the "
            f"{allowance(total)} it may delete unasked (a peer or server that lost its data looks like "
            f"this); nothing was written. If the deletions are wanted, run again with --allow-deletes "
            f"{planned} (every deleted memory goes to the trash first)")
