"""Signing a browser in to the memory browser when the API has a token.

A page cannot send a Bearer header when it is opened from the address bar,
so the browser gets a session cookie instead: ``localmem ui`` prints a
one-time login URL (``/ui/login?code=...``), and ``/ui/login`` also takes the
admin token typed into a form. Either sets ``localmem_ui`` — HttpOnly,
SameSite=Strict, Path=/ui — whose random value the server keeps in memory
(a restart signs every browser out). The cookie is accepted only under
``/ui/`` and only ever grants what the admin token grants; scoped tokens
cannot sign in. No third-party imports.
"""

from __future__ import annotations

import hmac
import secrets
import threading
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie

__all__ = ["COOKIE_NAME", "OPEN_PATHS", "UI_PREFIX", "Sessions", "cookie_header", "session_cookie"]

COOKIE_NAME = "localmem_ui"
UI_PREFIX = "/ui/"
# Reachable without signing in: the login page itself and the static files it uses.
OPEN_PATHS = ("/ui/login",)
OPEN_PREFIXES = ("/ui/static/",)
MAX_SESSIONS = 100


class Sessions:
    """The browser sessions and unused login codes of one running server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: list[str] = []
        self._codes: dict[str, Callable[[], None] | None] = {}

    def login_code(self, on_redeem: Callable[[], None] | None = None) -> str:
        """A new one-time code for ``/ui/login?code=``; ``on_redeem`` runs when it is spent."""
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._codes[code] = on_redeem
        return code

    def redeem(self, code: str) -> str | None:
        """A new session for an unused login code (which is then spent), else None."""
        # compare_digest takes str only when it is ASCII: compare the encoded bytes, so any
        # text a caller sends (non-ASCII, lone surrogates) is simply no match.
        supplied = code.encode("utf-8", "surrogatepass")
        with self._lock:
            match = next((c for c in self._codes if hmac.compare_digest(c.encode(), supplied)), None)
            if match is None:
                return None
            spent = self._codes.pop(match)
        if spent is not None:
            spent()
        return self.create()

    def create(self) -> str:
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._sessions.append(session)
            del self._sessions[:-MAX_SESSIONS]  # the oldest sign-ins lapse first
        return session

    def end(self, session: str | None) -> None:
        with self._lock:
            supplied = (session or "").encode("utf-8", "surrogatepass")
            self._sessions = [s for s in self._sessions if not hmac.compare_digest(s.encode(), supplied)]

    def valid(self, session: str | None) -> bool:
        if not session:
            return False
        with self._lock:
            known = list(self._sessions)
        supplied = session.encode("utf-8", "surrogatepass")
        found = False
        for candidate in known:  # every comparison runs: no early exit to time
            found = hmac.compare_digest(candidate.encode(), supplied) or found
        return found


def session_cookie(cookie_header_value: str | None) -> str | None:
    """The ``localmem_ui`` value from a ``Cookie`` header, if any."""
    if not cookie_header_value:
        return None
    jar = SimpleCookie()
    try:
        jar.load(cookie_header_value)
    except CookieError:
        return None
    morsel = jar.get(COOKIE_NAME)
    return morsel.value if morsel is not None else None


def cookie_header(session: str | None) -> str:
    """The ``Set-Cookie`` value that signs in with ``session`` (None: signs out)."""
    value, age = (session, "") if session else ("", "; Max-Age=0")
    return f"{COOKIE_NAME}={value}; Path=/ui; HttpOnly; SameSite=Strict{age}"


def is_open(path: str) -> bool:
    return path in OPEN_PATHS or path.startswith(OPEN_PREFIXES)
