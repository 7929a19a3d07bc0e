"""Token and bind-address rules of the HTTP API (no third-party imports)."""

from __future__ import annotations

import ipaddress
import os

from ..errors import ConfigError

__all__ = ["TOKEN_ENV_VARS", "check_bind", "is_loopback", "resolve_token"]

TOKEN_ENV_VARS = ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN")
LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


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


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 (also IPv4-mapped or bracketed) and ``localhost``.

    Any other host name counts as non-loopback: it may resolve anywhere.
    """
    name = (host or "").strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name in LOOPBACK_NAMES:
        return True
    try:
        address = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def check_bind(host: str, token: str | None) -> None:
    """Refuse (``ConfigError``) a non-loopback address unless an API token is configured."""
    if token is None and not is_loopback(host):
        raise ConfigError(
            f"Refusing to listen on {host!r} without an API token: anyone who can reach it "
            f"could read and change every memory. Set LOCALMEM_API_TOKEN (or AUTOMEM_API_TOKEN), "
            f"or listen on 127.0.0.1."
        )
