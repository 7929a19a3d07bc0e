"""Token and bind-address rules of the HTTP API (no third-party imports)."""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import ConfigError
from ..loopback import is_loopback

__all__ = ["ADMIN_TOKEN_ENV_VARS", "SCOPED_TOKENS_ENV_VAR", "TOKEN_ENV_VARS", "Grant", "TokenScopes",
           "admin_token_matches", "check_bind", "is_loopback", "parse_scoped_tokens", "resolve_admin_token",
           "resolve_token", "resolve_tokens"]

TOKEN_ENV_VARS = ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN")
# The second secret of the admin routes (POST /admin/reembed), read as AutoMem reads it.
ADMIN_TOKEN_ENV_VARS = ("ADMIN_API_TOKEN",)
ADMIN_TOKEN_HEADERS = (b"x-admin-token", b"x-admin-api-key")
SCOPED_TOKENS_ENV_VAR = "LOCALMEM_API_TOKENS"
ALL_CONTEXTS = "*"
_ENTRY_SEPARATORS = re.compile(r"[;\n]")



@dataclass(frozen=True)
class Grant:
    """What one token may do.

    ``admin``: every route and every context (the single API token). Otherwise
    the token is scoped: recall through ``POST /api/v1/memory/recall`` only,
    over ``contexts`` (None: every context, from ``TOKEN=*``; still not admin).
    """

    contexts: frozenset[str] | None = None
    admin: bool = False


ADMIN_GRANT = Grant(None, admin=True)

# token -> what it may do
TokenScopes = dict[str, Grant]


def resolve_token(token: str | None = None) -> str | None:
    """The API token: the argument, else ``$LOCALMEM_API_TOKEN``, else ``$AUTOMEM_API_TOKEN``.

    Blank values count as unset; surrounding whitespace is dropped.
    """
    if token is not None and token.strip():
        return token.strip()
    for name in TOKEN_ENV_VARS:
        value = os.environ.get(name, "")
        if value.strip():
            return value.strip()
    return None


def resolve_admin_token(token: str | None = None) -> str | None:
    """The admin token: the argument, else ``$ADMIN_API_TOKEN`` (blank counts as unset)."""
    if token is not None and token.strip():
        return token.strip()
    for name in ADMIN_TOKEN_ENV_VARS:
        value = os.environ.get(name, "")
        if value.strip():
            return value.strip()
    return None


def admin_token_matches(headers: Iterable[tuple[bytes, bytes]], admin_token: str) -> bool:
    """Whether ``X-Admin-Token`` (or ``X-Admin-Api-Key``) carries the admin token.

    AutoMem also takes ``?admin_token=``; localmem does not, since query
    strings end up in access logs and browser histories.
    """
    supplied = next((value.strip() for name, value in headers if name in ADMIN_TOKEN_HEADERS), None)
    return supplied is not None and hmac.compare_digest(supplied, admin_token.encode("utf-8"))


def _context_set(token_label: str, value: object) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        items: Iterable[object] = value.split(",")
    elif isinstance(value, Iterable):
        items = value
    else:
        raise ConfigError(f"Contexts of {token_label} must be '*' or a list of context names")
    names = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"Contexts of {token_label} must be strings")
        if item.strip():
            names.append(item.strip())
    if ALL_CONTEXTS in names:
        if len(names) > 1:
            raise ConfigError(f"{token_label}: '*' (every context) cannot be combined with names")
        return None
    if not names:
        raise ConfigError(f"{token_label} lists no context (use '*' for every context)")
    return frozenset(names)


def parse_scoped_tokens(text: str) -> dict[str, frozenset[str] | None]:
    """``"tokenA=work,notes; tokenB=*"`` → ``{"tokenA": {"work", "notes"}, "tokenB": None}``.

    Entries are separated by ``;`` or newlines; each is ``TOKEN=CONTEXTS``,
    split at the *last* ``=`` (so base64 tokens ending in ``=`` work);
    CONTEXTS is ``*`` (every context) or a comma-separated list of names.
    """
    scopes: dict[str, frozenset[str] | None] = {}
    for number, entry in enumerate(_ENTRY_SEPARATORS.split(text), start=1):
        entry = entry.strip()
        if not entry:
            continue
        token, sep, contexts = entry.rpartition("=")
        token = token.strip()
        label = f"{SCOPED_TOKENS_ENV_VAR} entry {number}"
        if not sep or not token:
            raise ConfigError(f"{label} must look like TOKEN=context1,context2 or TOKEN=*")
        odd = next((c for c in token if c.isspace() or c == ","), None)
        if odd is not None:
            # "a=work , b=*" would otherwise be one token "a=work , b" for every context.
            raise ConfigError(f"{label}: its token holds {'a comma' if odd == ',' else 'a space'}; "
                              "separate entries with ';' (tokenA=ctx1,ctx2; tokenB=*)")
        if token in scopes:
            raise ConfigError(f"{label}: the same token is listed twice")
        scopes[token] = _context_set(label, contexts)
    return scopes


def resolve_tokens(token: str | None = None,
                   tokens: str | Mapping[str, object] | None = None) -> TokenScopes:
    """Every accepted token with its grant.

    The single token (``token``, else ``$LOCALMEM_API_TOKEN`` /
    ``$AUTOMEM_API_TOKEN``) is the admin token; ``tokens`` (else
    ``$LOCALMEM_API_TOKENS``) adds scoped ones, recall-only, even ``TOKEN=*``.
    A token listed in both, or twice, is a ``ConfigError``: one token has one
    scope. Empty: no auth.
    """
    scopes: dict[str, frozenset[str] | None] = {}
    if isinstance(tokens, Mapping):
        for number, (name, contexts) in enumerate(tokens.items(), start=1):
            if not isinstance(name, str) or not name.strip():
                raise ConfigError(f"Scoped token {number} must be a non-empty string")
            if name.strip() in scopes:
                raise ConfigError(f"Scoped token {number} is listed twice")
            label = f"scoped token {number}"
            scopes[name.strip()] = _context_set(label, contexts)
    else:
        text = tokens if tokens is not None and tokens.strip() else os.environ.get(SCOPED_TOKENS_ENV_VAR, "")
        scopes = parse_scoped_tokens(text)
    grants: TokenScopes = {name: Grant(contexts) for name, contexts in scopes.items()}
    single = resolve_token(token)
    if single is not None:
        if single in grants:
            raise ConfigError(f"The API token also appears in the scoped tokens ({SCOPED_TOKENS_ENV_VAR}); "
                              f"give each token one scope")
        grants[single] = ADMIN_GRANT
    return grants


def check_bind(host: str, token: str | None) -> None:
    """Refuse (``ConfigError``) a non-loopback address unless an API token is configured."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"Refusing to listen on {host!r} without an API token: anyone who can reach it "
            f"could read and change every memory. Set LOCALMEM_API_TOKEN (or AUTOMEM_API_TOKEN), "
            f"or listen on 127.0.0.1."
        )
