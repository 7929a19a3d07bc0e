"""The token two stores draw at the end of each sync, and what a mismatch says about which one
was rolled back in place.

Both stores keep the token of their last sync (``sync_pair_tokens``). A store rolled back in
place (a file-system or disk snapshot put back: same file, identity and home) holds an older one.
The token counts the pair's syncs, so the next sync also knows *which* store is behind: that
store's own stamps made before the rollback may cover versions it no longer holds, and are not
taken as having seen them (``sync_rules._doubted``). A token is 32 hexadecimal characters, as
before (a server stores it as it is given): ``TAG``, the count (16 digits), 8 random digits.
Tokens drawn before the count (all random) tell nothing: both stores are then doubted.
"""

from __future__ import annotations

import secrets

TAG = "c0a7ed00"  # marks a counted token; a random one starts so once in 2**32
COUNT_DIGITS = 16


def count(token: str | None) -> int | None:
    """The number of syncs a counted token ends (None: no token, or one drawn without a count)."""
    if token is None or not token.startswith(TAG):
        return None
    return int(token[len(TAG):len(TAG) + COUNT_DIGITS], 16)


def draw(held: tuple[str | None, str | None]) -> str:
    """A new token for the pair, counting one sync past the later of the two ``held``."""
    counted = [c for c in map(count, held) if c is not None]
    return f"{TAG}{(max(counted, default=0) + 1) % 16 ** COUNT_DIGITS:0{COUNT_DIGITS}x}{secrets.token_hex(4)}"


def behind(first: str | None, second: str | None) -> tuple[bool, bool]:
    """Which of two stores' tokens for each other is the older one: the store that may have been
    rolled back in place (or missed a sync's very end). Equal tokens: neither. No token against
    one: the one without (rolled back to before the pair's first sync, or a peer's copy). Counts
    that differ: the lower. Anything else (tokens drawn before the count): both."""
    if first == second:
        return False, False
    if first is None or second is None:
        return first is None, second is None
    mine, theirs = count(first), count(second)
    if mine is None or theirs is None or mine == theirs:
        return True, True
    return mine < theirs, theirs < mine
