"""Which host names and browser origins the HTTP API answers (no third-party imports).

The threat: by default the server listens on 127.0.0.1 without a token, and
every web page the user visits runs next to it. A page can send "simple"
cross-origin requests (text/plain or form bodies need no CORS preflight) to
plant memories, and with DNS rebinding (its own host name re-resolving to
127.0.0.1) it can read the answers too. So a request must name this machine
in ``Host`` (a loopback name or address, or a configured name), a browser's
``Origin`` must be allowed, and bodies must be ``application/json`` (which a
page can only send after a preflight that is refused for foreign origins).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote_to_bytes, urlsplit

from ..errors import ConfigError
from .security import is_loopback

__all__ = ["HOSTS_ENV_VAR", "ORIGINS_ENV_VAR", "RequestPolicy", "host_refusal", "origin_refusal",
           "request_policy"]

HOSTS_ENV_VAR = "LOCALMEM_ALLOWED_HOSTS"
ORIGINS_ENV_VAR = "LOCALMEM_ALLOWED_ORIGINS"
ANY = "*"
# Binding to these listens everywhere; they are not a name a client would send.
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
# Sec-Fetch-Site values of a browser request made by a page of another origin.
CROSS_SITE = frozenset({"cross-site", "same-site"})
_SHOWN = 120  # characters of a refused header value quoted back


@dataclass(frozen=True)
class RequestPolicy:
    """Host names (beyond loopback) and browser origins the server accepts; ``"*"``: any."""

    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: tuple[str, ...] = ()

    @property
    def any_host(self) -> bool:
        return ANY in self.allowed_hosts

    @property
    def any_origin(self) -> bool:
        return ANY in self.allowed_origins


def _entries(value: str | Iterable[str] | None) -> list[str]:
    """A comma- or whitespace-separated string, or a list of such strings, as entries."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    entries: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"Allowed hosts and origins must be strings, not {type(item).__name__}")
        entries.extend(part for part in item.replace(",", " ").split() if part)
    return entries


def host_name(value: str) -> str | None:
    """The host part of a ``Host`` header or a configured name, lower case; None if malformed."""
    name = value.strip().lower()
    if name.startswith("["):  # [v6]:port
        end = name.find("]")
        if end < 0 or (name[end + 1:] and not name[end + 1:].startswith(":")):
            return None
        name = name[1:end]
    elif name.count(":") == 1:  # name:port (a bare IPv6 address has several colons)
        name, _, port = name.partition(":")
        if port and not port.isdigit():
            return None
    name = name.rstrip(".")
    if not name or any(c.isspace() or c in "/\\@?#" for c in name):
        return None
    return name


def _allowed_host(entry: str, source: str) -> str:
    if entry == ANY:
        return ANY
    name = host_name(entry)
    if name is None:
        raise ConfigError(f"{source}: {entry!r} is not a host name or address "
                          f"(give names like memory.lan or 192.168.1.5, or '*' for any)")
    return name


def _allowed_origin(entry: str, source: str) -> str:
    if entry == ANY:
        return ANY
    if entry.lower() == "null":
        raise ConfigError(f"{source}: the origin 'null' is sent by sandboxed pages and local files "
                          f"of any site, so it cannot be allowed")
    parts = urlsplit(entry.rstrip("/"))
    try:
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError:
        parts = parts._replace(netloc="")
    if not parts.scheme or not parts.netloc or parts.path or parts.query or parts.fragment:
        raise ConfigError(f"{source}: {entry!r} is not an origin; give scheme://host[:port] "
                          f"such as http://localhost:3000, or '*' for any")
    return f"{parts.scheme}://{parts.netloc}".lower()


def request_policy(allowed_hosts: str | Iterable[str] | None = None,
                   allowed_origins: str | Iterable[str] | None = None, *,
                   bind_host: str | None = None) -> RequestPolicy:
    """The policy from explicit values (CLI flags), else ``$LOCALMEM_ALLOWED_HOSTS`` /
    ``$LOCALMEM_ALLOWED_ORIGINS`` (comma-separated).

    Loopback names and addresses are always accepted as ``Host``; so is
    ``bind_host`` when the server listens on one specific name or address.
    A malformed entry is a ``ConfigError`` naming where it came from.
    """
    if allowed_hosts is None:
        hosts_source, allowed_hosts = HOSTS_ENV_VAR, os.environ.get(HOSTS_ENV_VAR)
    else:
        hosts_source = "allowed host"
    if allowed_origins is None:
        origins_source, allowed_origins = ORIGINS_ENV_VAR, os.environ.get(ORIGINS_ENV_VAR)
    else:
        origins_source = "allowed origin"
    hosts = {_allowed_host(entry, hosts_source) for entry in _entries(allowed_hosts)}
    if bind_host is not None and bind_host.strip().lower() not in WILDCARD_BINDS:
        hosts.add(_allowed_host(bind_host, "the address to listen on"))
    origins = [_allowed_origin(entry, origins_source) for entry in _entries(allowed_origins)]
    return RequestPolicy(frozenset(hosts), tuple(dict.fromkeys(origins)))


def _shown(value: str) -> str:
    return repr(value if len(value) <= _SHOWN else value[:_SHOWN] + "…")


def host_refusal(host: str | None, policy: RequestPolicy) -> str | None:
    """Why a request with this ``Host`` header is refused; None when it is accepted.

    No ``Host`` at all (HTTP/1.0 tools) is accepted: every browser sends one.
    """
    if host is None or policy.any_host:
        return None
    name = host_name(host)
    if name is not None and (is_loopback(name) or name in policy.allowed_hosts):
        return None
    return (f"Host {_shown(host)} is not allowed: this server answers only to loopback names and "
            f"addresses (localhost, 127.0.0.1, [::1]) and configured host names, so that a web page "
            f"cannot reach it through DNS rebinding. To serve another name, pass --allowed-host NAME "
            f"to localmem serve or set {HOSTS_ENV_VAR}=NAME (comma-separated; '*' allows any).")


def origin_refusal(origin: str | None, fetch_site: str | None, own_origin: str,
                   policy: RequestPolicy) -> str | None:
    """Why a browser request is refused; None when it is accepted.

    ``origin`` is the ``Origin`` header, ``fetch_site`` ``Sec-Fetch-Site`` and
    ``own_origin`` the server's origin as this request addressed it
    (``scheme://Host``, the Host already checked). Requests without either
    header come from programs, not pages, and are accepted.
    """
    if origin is None:
        if fetch_site is not None and fetch_site.strip().lower() in CROSS_SITE and not policy.any_origin:
            return (f"A browser request from another site (Sec-Fetch-Site: {fetch_site.strip()}) "
                    f"without an Origin header is not allowed. Web apps must call this server with "
                    f"fetch() from an origin listed in {ORIGINS_ENV_VAR} (or --allowed-origin).")
        return None
    value = origin.strip().lower().rstrip("/")
    if policy.any_origin or value == own_origin.lower() or value in policy.allowed_origins:
        return None
    return (f"Origin {_shown(origin)} is not allowed: web pages of other origins may not call this "
            f"server (a page could plant or read memories). To allow a web app, pass "
            f"--allowed-origin ORIGIN to localmem serve or set {ORIGINS_ENV_VAR}=ORIGIN "
            f"(comma-separated, such as http://localhost:3000).")


def query_string_refusal(query_string: bytes) -> str | None:
    """Why a query string is refused: a parameter whose name or value is not UTF-8 once
    percent-decoded (Starlette would turn the bad bytes into U+FFFD and answer a
    different question than the one asked), else None."""
    for part in query_string.split(b"&"):
        name, _, value = part.partition(b"=")
        try:
            decoded_name = unquote_to_bytes(name.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            return "a query parameter's name is not valid UTF-8 once percent-decoded"
        try:
            unquote_to_bytes(value.replace(b"+", b" ")).decode("utf-8")
        except UnicodeDecodeError:
            return f"query parameter {_shown(decoded_name)} is not valid UTF-8 once percent-decoded"
    return None
