"""The HTTP API: AutoMem-compatible routes over a MemoryStore (Starlette).

Every response is JSON, errors included, in AutoMem's envelope
``{"status": "error", "code": N, "message": "..."}``. The store's methods are
synchronous (and serialized by the store's own lock), so each endpoint runs
them in the thread pool and the event loop stays free.
"""

from __future__ import annotations

import functools
import hmac
import inspect
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .. import __version__
from ..errors import LocalMemError, NotFoundError, ValidationError
from ..kagura import RequestValidationError, parse_request, restrict_contexts
from ..kagura.request import REQUEST_FIELDS as RECALL_V1_FIELDS
from ..recall.params import ALIASES as RECALL_ALIASES
from ..recall.params import PARAMETERS as RECALL_PARAMETERS
from ..store import EDGE_PROPERTIES, STORE_FIELDS, UPDATE_FIELDS, MemoryStore
from ..timeparse import format_timestamp
from ..ui import auth as ui_auth
from ..ui.routes import ui_routes
from ..validation import validate_uuid
from .body import MAX_BODY_BYTES, read_json_object
from .guard import RequestGuard
from .policy import request_policy
from .security import (
    ADMIN_GRANT,
    TOKEN_ENV_VARS,
    Grant,
    TokenScopes,
    admin_token_matches,
    resolve_admin_token,
    resolve_token,
    resolve_tokens,
)

__all__ = ["MAX_BATCH", "MAX_BODY_BYTES", "TOKEN_ENV_VARS", "create_app", "resolve_token",
           "resolve_tokens"]

logger = logging.getLogger("localmem.http")

MAX_BATCH = 500
# Query-string parameters of GET /recall that take every repeated value
# (``tags`` is not comma-split by AutoMem; the others are, in recall's parser).
RECALL_MULTI_VALUE = frozenset({"tags", "queries", "exclude_tags", "context_tags",
                                "context_types", "priority_ids"})
RECALL_KNOWN = RECALL_PARAMETERS | frozenset(RECALL_ALIASES)
ASSOCIATION_FIELDS = frozenset({"memory1_id", "memory2_id", "type", "strength"})
# POST /admin/reembed: AutoMem's fields, and localmem's ``embedder`` (switch models in place).
REEMBED_FIELDS = frozenset({"limit", "batch_size", "force", "embedder"})
REEMBED_MAX_BATCH = 100  # AutoMem's cap
# Path segments under /memory/ that are routes of their own, not ids.
RESERVED_MEMORY_PATHS = {"by-tag": "GET, DELETE", "batch": "POST"}
AUTHENTICATED_SCOPE_KEY = "localmem.authenticated"
# True for the admin token, and for every caller when no token is configured.
ADMIN_SCOPE_KEY = "localmem.admin"
# The contexts the caller's token may see (None: every context).
CONTEXTS_SCOPE_KEY = "localmem.contexts"
# Routes a scoped token may call: recall over its contexts (and /health, trimmed).
CONTEXT_AWARE_PATHS = frozenset({("POST", "/api/v1/memory/recall")})

Endpoint = Callable[[Request], Awaitable[JSONResponse]]


# -- helpers ---------------------------------------------------------------


def error_response(code: int, message: str, *, headers: dict[str, str] | None = None,
                   **extra: Any) -> JSONResponse:
    body = {"status": "error", "code": code, "message": message, **extra}
    return JSONResponse(body, status_code=code, headers=headers)


def _locked(store: MemoryStore) -> AbstractContextManager[Any]:
    """The store's (re-entrant) lock, to make a few store calls one step."""
    lock = getattr(store, "lock", None)
    return lock if lock is not None else nullcontext()


def _touch(store: MemoryStore, memory_ids: list[str]) -> None:
    """Mark memories as accessed (AutoMem does so on GET /memory/{id} and by-tag)."""
    touch = getattr(store, "touch", None)
    if touch is None or not memory_ids:
        return
    with _locked(store):
        touch(memory_ids, store.now())


def _vector_channel(store: MemoryStore) -> bool:
    return (getattr(store, "embedder", None) is not None and store.has_vector_index
            and store.embedder_error is None)


def _storage_state(store: MemoryStore, info: dict[str, Any], vector_ok: bool) -> dict[str, str]:
    """What actually holds the memories: one SQLite file, its FTS5 index and its vector index."""
    if not store.has_vector_index:
        vectors = "unconfigured"
    elif not vector_ok:
        vectors = "embedder_unavailable"
    else:
        vectors = "ok" if info.get("vector_count") == info.get("embedding_count") else "drift"
    return {
        "engine": "sqlite",
        "full_text_index": "ok" if info.get("fts_count") == info.get("memory_count") else "drift",
        "vector_index": vectors,
    }


def _elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


def _known_fields(payload: dict[str, Any], allowed: Iterable[str], where: str = "") -> dict[str, Any]:
    """The body's fields, all of which the route must know (AutoMem ignores the rest silently).

    A misspelt field (``improtance``) would otherwise be dropped without a
    word and the memory stored or updated without it.
    """
    allowed = set(allowed)
    unknown = sorted(set(payload) - allowed)
    if unknown:
        raise ValidationError(
            f"{where}unknown field{'' if len(unknown) == 1 else 's'} "
            f"{', '.join(repr(k) for k in unknown)}; allowed: {', '.join(sorted(allowed))}")
    return dict(payload)


def _query_value(request: Request, name: str) -> str | None:
    """The first value of a query parameter (as Flask's ``args.get``); blank → None."""
    values = request.query_params.getlist(name)
    if not values or not values[0].strip():
        return None
    return values[0]


def _memory_id(request: Request) -> str:
    memory_id = request.path_params["memory_id"]
    if memory_id in RESERVED_MEMORY_PATHS:
        raise HTTPException(405, headers={"Allow": RESERVED_MEMORY_PATHS[memory_id]})
    return validate_uuid(memory_id)


def _endpoint(fn: Endpoint) -> Endpoint:
    """Errors as JSON envelopes: LocalMemError by its code, anything else 500 (logged)."""
    @functools.wraps(fn)
    async def wrapper(request: Request) -> JSONResponse:
        try:
            return await fn(request)
        except HTTPException:
            raise
        except LocalMemError as exc:
            code = exc.code if 400 <= exc.code <= 599 else 500
            if code >= 500:
                logger.error("%s %s failed: %s", request.method, request.url.path, exc.message)
            body = {**exc.to_dict(), "code": code}  # the envelope, plus any detail (422)
            return JSONResponse(body, status_code=code)
        except Exception:
            logger.exception("Unhandled error in %s %s", request.method, request.url.path)
            return error_response(500, "Internal server error")
    return wrapper


def _by_method(**handlers: Endpoint) -> Endpoint:
    """One route, several methods (so a 405 lists them all in ``Allow``)."""
    async def dispatch(request: Request) -> JSONResponse:
        method = "GET" if request.method == "HEAD" else request.method
        return await handlers[method](request)
    return _endpoint(dispatch)


# -- authentication --------------------------------------------------------


def _strip_api_key(query_string: bytes) -> tuple[bytes, bytes | None]:
    """Remove ``api_key`` from a raw query string; returns (rest, first api_key value)."""
    kept: list[bytes] = []
    found: bytes | None = None
    for part in query_string.split(b"&"):
        name, _, value = part.partition(b"=")
        if unquote_to_bytes(name.replace(b"+", b" ")) == b"api_key":
            if found is None:
                found = unquote_to_bytes(value.replace(b"+", b" "))
            continue
        kept.append(part)
    return b"&".join(kept), found


def _token_from_headers(scope: Scope) -> bytes | None:
    """``Authorization: Bearer <t>`` (any case), else ``X-API-Key`` (AutoMem's order)."""
    authorization = api_key = None
    for name, value in scope.get("headers", ()):
        if name == b"authorization" and authorization is None:
            authorization = value
        elif name == b"x-api-key" and api_key is None:
            api_key = value
    if authorization is not None and authorization[:7].lower() == b"bearer ":
        return authorization[7:].strip()
    if api_key is not None and api_key.strip():
        return api_key.strip()
    return None


class AuthMiddleware:
    """Require an API token on every route but ``/health`` and OPTIONS.

    ``tokens`` maps each accepted token to its ``Grant``. The admin token
    may call everything; a scoped token (``TOKEN=ctx`` or ``TOKEN=*``) only
    ``POST /api/v1/memory/recall``, over its contexts; anything else answers
    403. The grant travels in the ASGI scope to the route.

    ``?api_key=`` is always removed from the query string before the request
    goes further, so it never reaches a route, recall, or the access log.

    Under ``/ui/`` a browser signed in through ``/ui/login`` (``ui.auth``)
    counts as the admin; a page asked for there without it is sent to sign in.
    """

    def __init__(self, app: ASGIApp, tokens: TokenScopes | None,
                 sessions: ui_auth.Sessions | None = None) -> None:
        self.app = app
        self.tokens = [(t.encode("utf-8"), contexts) for t, contexts in (tokens or {}).items()]
        self.sessions = sessions

    def _match(self, supplied: bytes | None) -> Grant | None:
        found = None
        if supplied is None:
            return found
        for token, grant in self.tokens:  # every comparison runs: no early exit to time
            if hmac.compare_digest(supplied, token) and found is None:
                found = grant
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # In place: the server's access log reads the same scope.
        scope["query_string"], query_token = _strip_api_key(scope.get("query_string", b""))
        scope[CONTEXTS_SCOPE_KEY] = None
        if not self.tokens:
            scope[AUTHENTICATED_SCOPE_KEY] = scope[ADMIN_SCOPE_KEY] = True
            await self.app(scope, receive, send)
            return
        grant = self._match(_token_from_headers(scope) or query_token)
        in_ui = scope["path"] == "/ui" or scope["path"].startswith(ui_auth.UI_PREFIX)
        if grant is None and in_ui and self.sessions is not None:
            cookie = next((v.decode("latin-1") for k, v in scope.get("headers", ()) if k == b"cookie"), None)
            if self.sessions.valid(ui_auth.session_cookie(cookie)):
                grant = ADMIN_GRANT
        ok = grant is not None
        scope[AUTHENTICATED_SCOPE_KEY] = ok
        scope[ADMIN_SCOPE_KEY] = ok and grant.admin
        scope[CONTEXTS_SCOPE_KEY] = grant.contexts if ok else None
        open_route = (scope["method"] == "OPTIONS" or scope["path"] in ("/health", "/ui")
                      or ui_auth.is_open(scope["path"]))
        scoped_out = (ok and not grant.admin
                      and (scope["method"], scope["path"]) not in CONTEXT_AWARE_PATHS)
        if scoped_out and not open_route:
            response = error_response(
                403, "This token is scoped (recall only): it may call only POST /api/v1/memory/recall. "
                     "Use the admin token (LOCALMEM_API_TOKEN) for other routes.")
            await response(scope, receive, send)
            return
        if ok or open_route:
            await self.app(scope, receive, send)
            return
        if scope["path"] == ui_auth.UI_PREFIX and scope["method"] in ("GET", "HEAD"):
            await RedirectResponse("/ui/login", status_code=303)(scope, receive, send)
            return
        response = error_response(401, "Unauthorized", headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


# -- the application -------------------------------------------------------


def create_app(store: MemoryStore, *, token: str | None = None,
               tokens: str | dict[str, Any] | None = None,
               cors_origins: list[str] | None = None,
               allowed_hosts: str | list[str] | None = None,
               allowed_origins: str | list[str] | None = None,
               admin_token: str | None = None) -> Starlette:
    """The HTTP API over ``store``.

    ``token`` (else ``$LOCALMEM_API_TOKEN`` / ``$AUTOMEM_API_TOKEN``) turns on
    authentication with the admin token; ``tokens`` (else
    ``$LOCALMEM_API_TOKENS``, ``"tokenA=ctx1,ctx2;tokenB=*"``) adds recall-only
    tokens scoped to contexts. ``allowed_hosts`` (else
    ``$LOCALMEM_ALLOWED_HOSTS``) are the ``Host`` names answered besides
    loopback ones; ``allowed_origins`` (else ``$LOCALMEM_ALLOWED_ORIGINS``;
    ``cors_origins`` is an older name, added to them) the browser origins
    allowed, with CORS. See ``policy`` for why. ``admin_token`` (else
    ``$ADMIN_API_TOKEN``) is the second secret the admin routes need, in
    ``X-Admin-Token``, as AutoMem has it.
    """
    api_tokens = resolve_tokens(token, tokens)
    admin_secret = resolve_admin_token(admin_token)
    reembed_running = threading.Lock()
    policy = request_policy(allowed_hosts, allowed_origins)
    if cors_origins:
        policy = request_policy(policy.allowed_hosts, [*policy.allowed_origins, *cors_origins])
    call = run_in_threadpool
    sessions = ui_auth.Sessions()

    async def health(request: Request) -> JSONResponse:
        info = await call(store.health)
        vector_ok = bool(info.get("embedder", {}).get("available"))
        if not info.get("indexes_agree", True):
            sync_status = "drift_detected"
        elif not store.has_vector_index:
            sync_status = "unknown"
        elif info.get("vector_count") == info.get("memory_count"):
            sync_status = "synced"
        else:
            sync_status = "drift_detected"
        degraded = not vector_ok or sync_status == "drift_detected"
        dims = info.get("embedder", {}).get("dimensions")
        body = {
            **info,
            "status": "degraded" if degraded else "healthy",
            # No FalkorDB or Qdrant here: say what the storage is (AutoMem's MCP client
            # prints "falkordb"/"qdrant" only when present, so they are left out).
            "storage": _storage_state(store, info, vector_ok),
            "sync_status": sync_status,
            "vector_dimensions": {"configured": dims, "effective": dims, "collection": dims,
                                  "mismatch": False},
            "enrichment": {"status": "stopped", "queue_depth": 0, "pending": 0, "inflight": 0,
                           "processed": 0, "failed": 0},
            "graph": "sqlite",  # the edges live in the same SQLite file
            "timestamp": format_timestamp(store.now()),
        }
        return JSONResponse(_health_for(request.scope, body))

    async def store_memory(request: Request) -> JSONResponse:
        start = time.perf_counter()
        payload = await read_json_object(request)
        fields = _known_fields(payload, STORE_FIELDS)
        fields.pop("content", None)

        def work() -> tuple[dict[str, Any], str, str]:
            with _locked(store):
                memory_id = store.store(payload.get("content"), **fields)
                record = store.get(memory_id)
                if fields.get("embedding") is not None:
                    return record, "provided", "stored"
                if _vector_channel(store):
                    return record, "generated", "stored"
                return record, "skipped", "embedder_unavailable" if store.embedder_error else "unconfigured"

        record, embedding_status, vector_status = await call(work)
        return JSONResponse({
            "status": "success",
            "memory_id": record["id"],
            "stored_at": record["timestamp"],
            "type": record["type"],
            "confidence": record["confidence"],
            "vector_index": vector_status,  # AutoMem says "qdrant"; its MCP client never reads it here
            "embedding_status": embedding_status,
            "enrichment": "disabled",
            "metadata": record["metadata"],
            "timestamp": record["timestamp"],
            "updated_at": record["updated_at"],
            "last_accessed": record["last_accessed"],
            "query_time_ms": _elapsed_ms(start),
            "memory": record,
        }, status_code=201)

    async def store_batch(request: Request) -> JSONResponse:
        start = time.perf_counter()
        payload = await read_json_object(request)
        items = payload.get("memories")
        if not isinstance(items, list) or not items:
            raise ValidationError("'memories' must be a non-empty array")
        if len(items) > MAX_BATCH:
            raise ValidationError(f"Batch size limit is {MAX_BATCH} memories per request")
        cleaned = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValidationError(f"Memory at index {index} must be an object")
            cleaned.append(_known_fields(item, STORE_FIELDS, f"Memory at index {index}: "))
        provided = sum(1 for item in cleaned if item.get("embedding") is not None)

        def work() -> tuple[list[str], bool]:
            with _locked(store):
                ids = store.store_many(cleaned)
                return ids, _vector_channel(store)

        ids, vectors_ok = await call(work)
        stored_vectors = len(ids) if vectors_ok else provided
        return JSONResponse({
            "status": "success",
            "stored": len(ids),
            "memory_ids": ids,
            # "qdrant" is kept: AutoMem's MCP client shows it for batches (the vector index's count).
            "qdrant": f"stored ({stored_vectors})" if stored_vectors else "unconfigured",
            "vector_index": f"stored ({stored_vectors})" if stored_vectors else "unconfigured",
            "embedding_status": ("provided" if provided == len(ids) else
                                 "generated" if vectors_ok else
                                 "partial" if provided else "skipped"),
            "enrichment": "disabled",
            "query_time_ms": _elapsed_ms(start),
        }, status_code=201)

    async def get_memory(request: Request) -> JSONResponse:
        memory_id = _memory_id(request)

        def work() -> dict[str, Any]:
            with _locked(store):
                record = store.get(memory_id)
                _touch(store, [record["id"]])
                return record

        return JSONResponse({"status": "success", "memory": await call(work)})

    async def update_memory(request: Request) -> JSONResponse:
        memory_id = _memory_id(request)
        payload = await read_json_object(request)
        echoed = payload.pop("memory_id", memory_id)  # some clients repeat the path's id
        if not isinstance(echoed, str) or echoed.strip().lower() != memory_id.strip().lower():
            raise ValidationError(f"'memory_id' in the body ({echoed!r}) is not the id in the path ({memory_id})")
        record = await call(functools.partial(store.update, memory_id, **_known_fields(payload, UPDATE_FIELDS)))
        return JSONResponse({"status": "success", "memory_id": record["id"], "memory": record})

    async def delete_memory(request: Request) -> JSONResponse:
        memory_id = _memory_id(request)
        await call(store.delete, memory_id)
        return JSONResponse({"status": "success", "memory_id": memory_id})

    def _tag_args(request: Request) -> tuple[list[str] | None, str | None, str | None]:
        # Repeated ``tags`` and comma-separated ones (AutoMem's normalize_tag_list).
        tags = [part for value in request.query_params.getlist("tags")
                for part in value.split(",") if part.strip()] or None
        return tags, _query_value(request, "limit"), _query_value(request, "offset")

    async def by_tag(request: Request) -> JSONResponse:
        tags, limit, offset = _tag_args(request)

        def work() -> dict[str, Any]:
            with _locked(store):
                result = store.by_tag(tags, limit=limit, offset=offset)
                _touch(store, [m["id"] for m in result["memories"]])
                return result

        return JSONResponse(await call(work))

    async def delete_by_tag(request: Request) -> JSONResponse:
        tags, _, _ = _tag_args(request)

        def work() -> tuple[list[str], int]:
            deleted = 0
            with _locked(store):
                while True:
                    page = store.by_tag(tags, limit=200, offset=0)
                    if not page["memories"]:
                        return page["tags"], deleted
                    for memory in page["memories"]:
                        try:
                            store.delete(memory["id"])
                        except NotFoundError:
                            continue
                        deleted += 1

        wanted, deleted = await call(work)
        return JSONResponse({"status": "success", "tags": wanted, "deleted_count": deleted})

    def _association_args(item: dict[str, Any], where: str = "") -> dict[str, Any]:
        properties = _known_fields(item, EDGE_PROPERTIES | ASSOCIATION_FIELDS, where)
        args: dict[str, Any] = {
            "memory1_id": item.get("memory1_id"),
            "memory2_id": item.get("memory2_id"),
            **{k: v for k, v in properties.items() if k not in ASSOCIATION_FIELDS},
        }
        if item.get("type") is not None:
            args["type"] = item["type"]
        if item.get("strength") is not None:
            args["strength"] = item["strength"]
        return args

    async def associate(request: Request) -> JSONResponse:
        payload = await read_json_object(request)
        if "associations" in payload:
            return await associate_batch(payload["associations"])
        result = await call(functools.partial(store.associate, **_association_args(payload)))
        verb = "updated" if result.get("updated") else "created"
        return JSONResponse({
            "status": "success",
            "message": f"Association {verb} between {result['memory1_id']} and {result['memory2_id']}"
                       + (f" (strength {result['previous_strength']} -> {result['strength']})"
                          if result.get("updated") else ""),
            **result,
        }, status_code=201)

    async def dissociate(request: Request) -> JSONResponse:
        # DELETE /associate: the edge(s) memory1 -> memory2 (one ``type``, or all),
        # named by query parameters or, failing those, a JSON body like POST's.
        names = ("memory1_id", "memory2_id", "type")
        args: dict[str, Any] = {k: v for k in names if (v := _query_value(request, k)) is not None}
        required = ValidationError("'memory1_id' and 'memory2_id' are required "
                                   "(as query parameters or in a JSON body)")
        has_body = (request.headers.get("content-length", "0") != "0"
                    or "transfer-encoding" in request.headers)
        if not args and not has_body:
            raise required
        if not args:  # a body: a JSON object of these fields, as every route takes it (415, 400 otherwise)
            args = _known_fields(await read_json_object(request), names)
        if args.get("memory1_id") is None or args.get("memory2_id") is None:
            raise required
        result = await call(functools.partial(store.dissociate, **args))
        count = result["removed"]
        return JSONResponse({
            "status": "success",
            "message": (f"Removed {count} association{'' if count == 1 else 's'} from "
                        f"{result['memory1_id']} to {result['memory2_id']}"),
            **result,
        })

    async def associate_batch(items: Any) -> JSONResponse:
        if not isinstance(items, list) or not items:
            raise ValidationError("'associations' must be a non-empty array")
        if len(items) > MAX_BATCH:
            raise ValidationError(f"Batch size limit is {MAX_BATCH} associations per request")

        def work() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
            succeeded: list[dict[str, Any]] = []
            failed: list[dict[str, Any]] = []
            for index, item in enumerate(items):
                if not isinstance(item, dict):
                    failed.append({"index": index, "reason": f"Association at index {index} must be an object"})
                    continue
                try:
                    result = store.associate(**_association_args(item, f"Association at index {index}: "))
                except LocalMemError as exc:
                    failed.append({"index": index, "reason": exc.message})
                    continue
                succeeded.append({"index": index, "memory1_id": result["memory1_id"],
                                  "memory2_id": result["memory2_id"],
                                  "relation_type": result["relation_type"],
                                  "strength": result["strength"],
                                  **{k: result[k] for k in ("updated", "previous_strength", "warnings")
                                     if k in result}})
            return succeeded, failed

        succeeded, failed = await call(work)
        report = {
            "created_count": len(succeeded),
            "failed_count": len(failed),
            "succeeded": succeeded,
            "failed": failed,
            "summary": f"{len(succeeded)}/{len(items)} associations created successfully",
        }
        if not succeeded:
            return error_response(400, f"No associations were created: {failed[0]['reason']}", **report)
        if failed:
            return JSONResponse({"status": "partial_success", **report}, status_code=207)
        return JSONResponse({"status": "success", **report}, status_code=201)

    async def recall(request: Request) -> JSONResponse:
        raw = recall_params(request)
        return JSONResponse(await call(functools.partial(store.recall, **raw)))

    async def related(request: Request) -> JSONResponse:
        memory_id = request.path_params["memory_id"]
        types = [t for t in request.query_params.getlist("relationship_types") if t.strip()]
        result = await call(functools.partial(
            store.related, memory_id,
            relationship_types=",".join(types) if types else None,
            max_depth=_query_value(request, "max_depth"),
            limit=_query_value(request, "limit"),
        ))
        return JSONResponse(result)

    async def recall_v1(request: Request) -> JSONResponse:
        method = getattr(store, "recall_v1", None)
        if method is None:
            return error_response(
                501, "POST /api/v1/memory/recall is not implemented by this MemoryStore yet")
        try:
            payload = await read_json_object(request)
        except ValidationError as exc:
            raise RequestValidationError([{"loc": ["body"], "msg": exc.message,
                                           "type": "model_attributes_type"}]) from None
        # Only the request's own fields: an unknown one is a 422 (pydantic's
        # extra="forbid"), not dropped; ``now`` is for Python callers, not for the wire.
        extra = sorted(set(payload) - set(RECALL_V1_FIELDS))
        if extra:
            raise RequestValidationError([{"loc": ["body", name], "msg": (
                f"Extra inputs are not permitted; the request fields are {', '.join(sorted(RECALL_V1_FIELDS))}"),
                "type": "extra_forbidden"} for name in extra])
        parse_request(payload)  # 422 with every problem, store untouched
        parameters = inspect.signature(method).parameters
        allowed = set(RECALL_V1_FIELDS)
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            allowed &= set(parameters)
        arguments = {k: v for k, v in payload.items() if k in allowed}
        contexts = request.scope.get(CONTEXTS_SCOPE_KEY)

        def work() -> dict[str, Any]:
            with restrict_contexts(contexts):
                return method(**arguments)

        return JSONResponse(await call(work))

    async def admin_reembed(request: Request) -> JSONResponse:
        # AutoMem's admin check: the API token (AuthMiddleware) and the admin token.
        if admin_secret is None:
            return error_response(403, "Admin token not configured (set ADMIN_API_TOKEN)")
        if not admin_token_matches(request.scope.get("headers", ()), admin_secret):
            return error_response(401, "Admin authorization required (X-Admin-Token)")
        has_body = (request.headers.get("content-length", "0") != "0"
                    or "transfer-encoding" in request.headers)
        payload = _known_fields(await read_json_object(request), REEMBED_FIELDS) if has_body else {}
        batch_size = payload.get("batch_size", 32)
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
            raise ValidationError("'batch_size' must be a positive integer")
        limit = payload.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise ValidationError("'limit' must be a positive integer")
        if not isinstance(payload.get("force", False), bool):
            raise ValidationError("'force' must be a boolean")
        name = payload.get("embedder")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise ValidationError("'embedder' must be an embedder name, such as 'hash:384' or a model")

        def work() -> dict[str, Any]:
            from ..embedders import resolve_embedder
            from ..maintenance.reembed import Reembedder

            if not reembed_running.acquire(blocking=False):
                raise LocalMemError("A reembed is already running", code=409)
            try:
                target = resolve_embedder(name) if name is not None else None
                runner = Reembedder(store, target, batch_size=min(batch_size, REEMBED_MAX_BATCH))
                return {**runner.run(limit), "batch_size": runner.batch_size}
            finally:
                reembed_running.release()

        report = await call(work)
        return JSONResponse({"failed": 0, "metadata_preserved": True, **report})

    routes = [
        Route("/health", _endpoint(health), methods=["GET"]),
        Route("/memory", _endpoint(store_memory), methods=["POST"]),
        # Before /memory/{memory_id}, which would otherwise take these paths.
        Route("/memory/batch", _endpoint(store_batch), methods=["POST"]),
        Route("/memory/by-tag", _by_method(GET=by_tag, DELETE=delete_by_tag),
              methods=["GET", "DELETE"]),
        Route("/memory/{memory_id}",
              _by_method(GET=get_memory, PATCH=update_memory, DELETE=delete_memory),
              methods=["GET", "PATCH", "DELETE"]),
        Route("/associate", _by_method(POST=associate, DELETE=dissociate), methods=["POST", "DELETE"]),
        Route("/recall", _endpoint(recall), methods=["GET"]),
        Route("/memories/{memory_id}/related", _endpoint(related), methods=["GET"]),
        Route("/api/v1/memory/recall", _endpoint(recall_v1), methods=["POST"]),
        Route("/admin/reembed", _endpoint(admin_reembed), methods=["POST"]),
        # The memory browser (localmem ui): its page and the JSON routes it reads.
        *ui_routes(store, sessions, [t for t, grant in api_tokens.items() if grant.admin],
                   endpoint=_endpoint),
    ]
    middleware = [Middleware(RequestGuard, policy=policy)]
    if policy.allowed_origins:
        middleware.append(Middleware(
            CORSMiddleware, allow_origins=list(policy.allowed_origins),
            allow_methods=["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=["Content-Type", "X-API-Key", "Authorization"],
        ))
    middleware.append(Middleware(AuthMiddleware, tokens=api_tokens, sessions=sessions))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_error, Exception: _server_error},
    )
    app.router.redirect_slashes = False  # a redirect is not JSON; /memory/ is simply 404
    app.state.store = store
    app.state.auth_required = bool(api_tokens)
    app.state.ui_sessions = sessions  # localmem ui asks it for a one-time login code
    return app


# What /health shows a caller that is not the admin: liveness, and for a scoped
# token the storage state (the vector channel's among it) too; never counts,
# the file path or its size.
HEALTH_ANONYMOUS = ("status", "service", "version", "timestamp")
HEALTH_SCOPED = HEALTH_ANONYMOUS + ("storage",)


def _health_for(scope: Scope, body: dict[str, Any]) -> dict[str, Any]:
    body = {**body, "service": "localmem", "version": __version__}
    if scope.get(ADMIN_SCOPE_KEY):
        return body
    if not scope.get(AUTHENTICATED_SCOPE_KEY):
        return {key: body[key] for key in HEALTH_ANONYMOUS}
    embedder = body.get("embedder", {})
    contexts = scope.get(CONTEXTS_SCOPE_KEY)
    return {**{key: body[key] for key in HEALTH_SCOPED},
            "embedder": {key: embedder.get(key) for key in ("name", "dimensions", "available")},
            "contexts": "*" if contexts is None else sorted(contexts)}


def recall_params(request: Request) -> dict[str, Any]:
    """GET /recall's query string as ``store.recall`` keyword arguments.

    List parameters keep every repeated value (recall comma-splits all of
    them but ``tags``); the others take the first value, and blank ones are
    dropped. Parameters recall does not know (``format``, ``offset`` sent by
    AutoMem's MCP client, ``api_key``) are ignored, as AutoMem does.
    Canonical names come before their aliases, so ``sort`` wins over ``order_by``.
    """
    params = request.query_params
    names = sorted(dict.fromkeys(params.keys()), key=lambda k: k in RECALL_ALIASES)
    raw: dict[str, Any] = {}
    for key in names:
        if key not in RECALL_KNOWN:
            continue
        if RECALL_ALIASES.get(key, key) in RECALL_MULTI_VALUE:
            raw[key] = params.getlist(key)
            continue
        value = _query_value(request, key)
        if value is not None:
            raw[key] = value
    return raw


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    return error_response(exc.status_code, exc.detail, headers=dict(exc.headers or {}))


async def _server_error(request: Request, exc: Exception) -> JSONResponse:
    # Only errors outside the endpoints get here; the server logs the traceback.
    return error_response(500, "Internal server error")

