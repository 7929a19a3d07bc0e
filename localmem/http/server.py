"""Run the HTTP API with uvicorn (``localmem serve``)."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .policy import request_policy
from .security import check_bind, is_loopback, resolve_token, resolve_tokens

if TYPE_CHECKING:
    import uvicorn

    from ..store import MemoryStore

__all__ = ["check_bind", "is_loopback", "resolve_token", "serve", "uvicorn_config"]

KEEP_ALIVE_TIMEOUT = 5  # seconds an idle keep-alive connection stays open
MAX_HEADER_BYTES = 16 * 1024  # h11's limit on the request line and headers
WARM_UP_JOIN_SECONDS = 30  # how long a stopping server waits for its warm-up to finish


def uvicorn_config(app: Any, *, host: str = "127.0.0.1", port: int = 8001,
                   log_level: str = "info", header_timeout: float | None = None,
                   body_timeout: float | None = None, **options: Any) -> uvicorn.Config:
    """The uvicorn configuration ``serve`` uses: h11 with read deadlines (see ``protocol``).

    ``header_timeout`` / ``body_timeout`` default to ``protocol``'s; the access log shows no
    query strings unless ``log_level`` is debug or trace (``access_log``); other
    ``options`` go to ``uvicorn.Config`` as they are.
    """
    import uvicorn

    from .access_log import log_config
    from .protocol import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, guarded_protocol

    http = guarded_protocol(DEFAULT_HEADER_TIMEOUT if header_timeout is None else header_timeout,
                            DEFAULT_BODY_TIMEOUT if body_timeout is None else body_timeout)
    # The lifespan runs /mcp's session manager (mcp_mount); it starts nothing else. The access
    # log leaves query strings out below the debug level (access_log).
    settings: dict[str, Any] = {"lifespan": "on", "server_header": False, "log_config": log_config(log_level),
                                "timeout_keep_alive": KEEP_ALIVE_TIMEOUT,
                                "h11_max_incomplete_event_size": MAX_HEADER_BYTES, **options}
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, http=http, **settings)


def serve(store: MemoryStore, host: str = "127.0.0.1", port: int = 8001,
          token: str | None = None, log_level: str = "info", *,
          cors_origins: list[str] | None = None, tokens: str | dict | None = None,
          allowed_hosts: str | list[str] | None = None,
          allowed_origins: str | list[str] | None = None) -> None:
    """Serve the HTTP API for ``store`` until interrupted (blocks).

    The token is ``token``, else ``$LOCALMEM_API_TOKEN``, else
    ``$AUTOMEM_API_TOKEN``; context-scoped tokens come from ``tokens``, else
    ``$LOCALMEM_API_TOKENS``. Without any token, only a loopback address is
    allowed (``ConfigError`` otherwise). ``allowed_hosts`` (else
    ``$LOCALMEM_ALLOWED_HOSTS``) are the ``Host`` names answered besides
    loopback ones and ``host`` itself; ``allowed_origins`` (else
    ``$LOCALMEM_ALLOWED_ORIGINS``) the browser origins allowed.
    """
    api_tokens = resolve_tokens(token, tokens)
    check_bind(host, next(iter(api_tokens), None))
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"Invalid port {port!r}: must be an integer from 0 to 65535")
    policy = request_policy(allowed_hosts, allowed_origins, bind_host=host)  # ConfigError early
    try:
        import uvicorn

        from .app import create_app
        from .routes_hooks import advertising_server, new_hook_secret
    except ImportError as exc:
        raise ConfigError(
            "The HTTP server needs the 'server' extra: pip install 'localmem[server]'"
        ) from exc
    hook_secret = new_hook_secret()  # published in the store's discovery note once listening
    app = create_app(store, token=token, tokens=tokens, cors_origins=cors_origins,
                     allowed_hosts=sorted(policy.allowed_hosts),
                     allowed_origins=list(policy.allowed_origins), hook_secret=hook_secret)
    # The first recall should cost what later ones do: the models load while the server starts.
    warming = threading.Thread(target=_warm_up, args=(store,), name="localmem-serve-warm-up", daemon=True)
    warming.start()
    try:
        advertising_server(uvicorn_config(app, host=host, port=port, log_level=log_level),
                           store, hook_secret).run()
    finally:
        warming.join(WARM_UP_JOIN_SECONDS)  # not ended mid-load by the interpreter's exit


def _warm_up(store: MemoryStore) -> None:
    try:
        store.warm_up()
    except Exception as exc:  # the first request meets the same fault and reports it
        print(f"localmem serve: warm-up: {type(exc).__name__}: {exc}", file=sys.stderr)
