"""``POST /hooks/{event}``: ``localmem hook`` forwarded to a running server, and how the server
tells the hook where it is (its discovery note).

The route answers a hook with the server's warm store (``events.answer_hook``).
It asks for the server's hook secret in ``X-Localmem-Hook-Secret`` whatever
the API token settings (the authentication layer lets ``/hooks/`` through to
it): the secret is random per run and written only to the discovery note,
which only this user can read, so another local user cannot call the route.
The body is ``{"payload": <the hook's JSON>, "settings": {LOCALMEM_HOOK_*: value}}``
(the hook process's own settings, so a forwarded answer is the one the hook
would give in-process); the answer is ``{"answer": <JSON to print> | null}``.
"""

from __future__ import annotations

import hmac
import os
import secrets
import sys
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import ValidationError
from ..hooks import discovery
from ..hooks.client import SECRET_HEADER, SERVER_PID_HEADER, SETTINGS_PREFIX
from ..storage.database import MEMORY_PATH
from ..store import MemoryStore
from ..request_body import read_json_object
from .endpoints import Endpoint, error_response, known_fields

if TYPE_CHECKING:
    import uvicorn

    from ..hooks.events import HookAnswer

__all__ = ["MAX_HOOK_BODY_BYTES", "advertising_server", "hook_endpoint", "new_hook_secret"]

MAX_HOOK_BODY_BYTES = 2 * 1024 * 1024  # the hook reads at most 1 MiB of payload, plus its settings
MAX_SETTINGS = 64


def new_hook_secret() -> str:
    return secrets.token_hex(32)


def hook_endpoint(store: MemoryStore, secret: str | None) -> Endpoint:
    """The route's handler; without a secret (an app not started by ``serve``/``ui``) it answers 404."""
    expected = secret.encode("ascii") if secret else None

    async def answer(request: Request) -> JSONResponse:
        if expected is None:
            return error_response(404, "This server takes no hooks (it was not started by 'localmem serve' "
                                       "or 'localmem ui', which publish a hook secret)")
        supplied = request.headers.get(SECRET_HEADER, "").encode("latin-1")
        if not hmac.compare_digest(supplied, expected):
            return error_response(403, f"The hook route needs this server's hook secret in {SECRET_HEADER}; "
                                       "'localmem hook' reads it from the server's discovery note")
        event = request.path_params["event"]
        body = known_fields(await read_json_object(request, MAX_HOOK_BODY_BYTES), ("payload", "settings"))
        payload, environment = body.get("payload"), body.get("settings", {})
        if not isinstance(payload, dict):
            raise ValidationError("'payload' must be the hook's JSON object")
        if (not isinstance(environment, dict) or len(environment) > MAX_SETTINGS
                or not all(isinstance(k, str) and k.startswith(SETTINGS_PREFIX) and isinstance(v, str)
                           for k, v in environment.items())):
            raise ValidationError(f"'settings' must map at most {MAX_SETTINGS} {SETTINGS_PREFIX}* names to strings")
        result = await run_in_threadpool(_answer, store, event, payload, environment)
        return JSONResponse({"answer": result.output, "report": result.report},
                            headers={SERVER_PID_HEADER: str(os.getpid())})

    return answer


def _answer(store: MemoryStore, event: str, payload: dict[str, Any],
            environment: dict[str, str]) -> "HookAnswer":
    from ..hooks.events import answer_hook_with_report
    from ..hooks.settings import HookSettings

    return answer_hook_with_report(store, event, payload, HookSettings.from_env(environment))


def advertising_server(config: uvicorn.Config, store: MemoryStore, secret: str) -> uvicorn.Server:
    """A uvicorn server that writes its store's discovery note once it listens, and removes it
    when it stops (at the start of its shutdown, so no hook is sent to a closing server)."""
    import uvicorn

    class AdvertisingServer(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                _publish(self, store, secret)

        async def shutdown(self, sockets: Any = None) -> None:
            _withdraw(store, secret)
            await super().shutdown(sockets)

    return AdvertisingServer(config)


def _publish(server: uvicorn.Server, store: MemoryStore, secret: str) -> None:
    if store.path == MEMORY_PATH or not discovery.supported():
        return
    try:
        bound = str(server.servers[0].sockets[0].getsockname()[0])
        port = int(server.servers[0].sockets[0].getsockname()[1])
    except (IndexError, AttributeError, TypeError) as exc:
        print(f"localmem: hooks will not find this server: its address is unknown ({exc})", file=sys.stderr)
        return
    note_host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bound, bound)
    if not discovery.loopback_literal(note_host):
        print(f"localmem: hooks will not find this server: it listens on {bound}, not on loopback "
              "(they answer in-process instead)", file=sys.stderr)
        return
    try:
        discovery.write_note(store.path, host=note_host, port=port, secret=secret)
    except (discovery.NoteRefused, OSError) as exc:
        print(f"localmem: hooks will not find this server: its discovery note was not written ({exc})",
              file=sys.stderr)


def _withdraw(store: MemoryStore, secret: str) -> None:
    if store.path != MEMORY_PATH and discovery.supported():
        discovery.remove_note(store.path, secret)
