"""Which host names are this machine: the one rule the HTTP server and push share."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = frozenset({"localhost", "localhost."})


def is_loopback(host: str | None) -> bool:
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
