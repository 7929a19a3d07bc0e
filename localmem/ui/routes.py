"""The memory browser's routes, mounted under ``/ui/`` by ``http.app.create_app``.

Pages: ``/ui/`` (one HTML page; the script draws every view) and
``/ui/login``. JSON: ``/ui/api/...``, every answer and error in the API's
envelope. Writes take JSON bodies only (``request_body``), as every API route.
Authentication, Host and Origin rules are the API's own middleware; the
cookie sign-in is in ``ui.auth``.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Awaitable, Callable, Iterable
from importlib import resources
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import ValidationError
from ..request_body import read_json_object
from ..store import MemoryStore
from . import data
from .auth import COOKIE_NAME, Sessions, cookie_header

Endpoint = Callable[[Request], Awaitable[Response]]

# No request may leave the page's own origin: scripts, styles, fonts, images and fetches alike.
CONTENT_SECURITY_POLICY = ("default-src 'self'; img-src 'self' data:; style-src 'self'; "
                           "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                           "base-uri 'none'; form-action 'self'")
PAGE_HEADERS = {"Content-Security-Policy": CONTENT_SECURITY_POLICY, "X-Content-Type-Options": "nosniff",
                "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
RECALL_FIELDS = ("query", "time_query", "context", "state_mode", "limit", "tag_mode", "sort",
                 "expand_relations")
EDIT_FIELDS = frozenset({"content", "tags", "importance", "type"})
LINK_FIELDS = frozenset({"memory1_id", "memory2_id", "type", "strength"})
UNLINK_FIELDS = frozenset({"memory1_id", "memory2_id", "type"})
SUPERSEDE_FIELDS = frozenset({"old_id", "new_content", "relation", "reason"})


def static_dir() -> str:
    """What the pages load (scripts, styles). The pages themselves are not in it: served
    from there they would lack PAGE_HEADERS (and be open without signing in)."""
    return str(resources.files("localmem").joinpath("ui", "static"))


def _page(name: str, status_code: int = 200) -> Response:
    html = resources.files("localmem").joinpath("ui", "pages", name).read_text("utf-8")
    return Response(html, status_code=status_code, media_type="text/html; charset=utf-8", headers=PAGE_HEADERS)


def _query(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return value if value is not None and value.strip() else None


def _fields(payload: dict[str, Any], allowed: Iterable[str]) -> dict[str, Any]:
    unknown = sorted(set(payload) - set(allowed))
    if unknown:
        raise ValidationError(f"unknown field{'' if len(unknown) == 1 else 's'} "
                              f"{', '.join(repr(k) for k in unknown)}; allowed: {', '.join(sorted(allowed))}")
    return payload


def ui_routes(store: MemoryStore, sessions: Sessions, admin_tokens: list[str], *,
              endpoint: Callable[[Endpoint], Endpoint]) -> list[Route | Mount]:
    """The ``/ui`` routes over ``store``; ``endpoint`` wraps each JSON route (errors as envelopes)."""
    def json_route(fn: Callable[[Request], Any]) -> Endpoint:
        async def run(request: Request) -> Response:
            answer = await fn(request)
            return answer if isinstance(answer, Response) else JSONResponse(answer)
        return endpoint(run)

    def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Awaitable[Any]:
        return run_in_threadpool(functools.partial(fn, *args, **kwargs))

    async def index(request: Request) -> Response:
        return _page("index.html")

    async def login_page(request: Request) -> Response:
        code = request.query_params.get("code")
        if code is not None:
            session = sessions.redeem(code)
            if session is None:  # spent, unknown or malformed: the form says how to sign in
                return _page("login.html", status_code=401)
            return RedirectResponse("/ui/", status_code=303, headers={"Set-Cookie": cookie_header(session)})
        return _page("login.html")

    async def login(request: Request) -> Response:
        payload = _fields(await read_json_object(request), {"token"})
        token = payload.get("token")
        if not isinstance(token, str) or not token.strip():
            raise ValidationError("'token' must be the API token (LOCALMEM_API_TOKEN)")
        supplied = token.strip().encode()
        ok = False
        for known in admin_tokens:  # every comparison runs
            ok = hmac.compare_digest(known.encode(), supplied) or ok
        if not ok:
            return JSONResponse({"status": "error", "code": 401,
                                 "message": "Not the admin token (scoped tokens cannot sign in to the browser)"},
                                status_code=401)
        return JSONResponse({"status": "success"}, headers={"Set-Cookie": cookie_header(sessions.create())})

    async def logout(request: Request) -> Response:
        sessions.end(request.cookies.get(COOKIE_NAME))
        return JSONResponse({"status": "success"}, headers={"Set-Cookie": cookie_header(None)})

    async def vocabulary(request: Request) -> Any:
        return {"status": "success", "auth": bool(admin_tokens), **data.vocabulary()}

    async def search(request: Request) -> Any:
        params: dict[str, Any] = {k: v for k in RECALL_FIELDS if (v := _query(request, k)) is not None}
        tags = [t for value in request.query_params.getlist("tags") for t in value.split(",") if t.strip()]
        if tags:
            params["tags"] = tags
        params.setdefault("limit", "10")
        if "time_query" in params:
            params["strict_time"] = True  # words the time grammar does not know are an error on the page
        return await call(data.search, store, params, _query(request, "type"))

    async def tags(request: Request) -> Any:
        found = await call(data.tag_completions, store, request.query_params.get("prefix", ""),
                           _query(request, "limit"))
        return {"status": "success", "tags": found}

    async def tag_tree(request: Request) -> Any:
        return {"status": "success", "tree": await call(data.tag_tree, store)}

    async def timeline(request: Request) -> Any:
        return {"status": "success", **await call(data.timeline, store, request.query_params.get("unit", "day"))}

    async def contexts(request: Request) -> Any:
        return {"status": "success", "contexts": await call(data.contexts, store)}

    async def memories(request: Request) -> Any:
        return await call(data.list_page, store, limit=_query(request, "limit"),
                          offset=_query(request, "offset"), tag=_query(request, "tag"),
                          context=_query(request, "context"))

    async def memory(request: Request) -> Any:
        memory_id = request.path_params["memory_id"]
        if request.method == "DELETE":
            await call(store.delete, memory_id)
            return {"status": "success", "memory_id": memory_id, "deleted": True}
        if request.method == "PATCH":
            fields = _fields(await read_json_object(request), EDIT_FIELDS)
            if not fields:
                raise ValidationError(f"nothing to change: send one of {', '.join(sorted(EDIT_FIELDS))}")
            record = await call(store.update, memory_id, **fields)
            return {"status": "success", "memory": record}
        return await call(data.memory_page, store, memory_id)

    async def supersede(request: Request) -> Any:
        payload = _fields(await read_json_object(request), SUPERSEDE_FIELDS)
        if not isinstance(payload.get("old_id"), str) or not isinstance(payload.get("new_content"), str):
            raise ValidationError("'old_id' and 'new_content' (the new text, or an existing memory's id) "
                                  "are required strings")
        extra = {k: payload[k] for k in ("relation", "reason") if payload.get(k) is not None}
        return await call(store.supersede, payload["old_id"], payload["new_content"], **extra)

    async def link(request: Request) -> Any:
        payload = _fields(await read_json_object(request), LINK_FIELDS)
        if request.method == "DELETE":
            payload = _fields(payload, UNLINK_FIELDS)
            return await call(store.dissociate, payload.get("memory1_id"), payload.get("memory2_id"),
                              payload.get("type"))
        args = {k: v for k, v in payload.items() if v is not None}
        if isinstance(args.get("memory2_id"), str) and args["memory2_id"].strip():
            # The page shows short ids; a unique prefix names the other memory, as in the CLI.
            args["memory2_id"] = await call(store.resolve_id, args["memory2_id"].strip(), "memory2_id")
        return await call(store.associate, **args)

    async def graph(request: Request) -> Any:
        return await call(data.neighbourhood, store, request.path_params["memory_id"], _query(request, "depth"))

    async def hubs(request: Request) -> Any:
        return await call(data.hubs, store, _query(request, "limit"))

    async def health(request: Request) -> Any:
        return await call(data.health, store)

    return [
        Route("/ui", lambda request: RedirectResponse("/ui/", status_code=308), methods=["GET"]),
        Route("/ui/", index, methods=["GET"]),
        Route("/ui/login", endpoint(_by_method(GET=login_page, POST=login)), methods=["GET", "POST"]),
        Route("/ui/logout", json_route(logout), methods=["POST"]),
        Route("/ui/api/vocabulary", json_route(vocabulary), methods=["GET"]),
        Route("/ui/api/search", json_route(search), methods=["GET"]),
        Route("/ui/api/tags", json_route(tags), methods=["GET"]),
        Route("/ui/api/tag-tree", json_route(tag_tree), methods=["GET"]),
        Route("/ui/api/timeline", json_route(timeline), methods=["GET"]),
        Route("/ui/api/contexts", json_route(contexts), methods=["GET"]),
        Route("/ui/api/memories", json_route(memories), methods=["GET"]),
        Route("/ui/api/memories/{memory_id}", json_route(memory), methods=["GET", "PATCH", "DELETE"]),
        Route("/ui/api/supersede", json_route(supersede), methods=["POST"]),
        Route("/ui/api/links", json_route(link), methods=["POST", "DELETE"]),
        Route("/ui/api/graph/{memory_id}", json_route(graph), methods=["GET"]),
        Route("/ui/api/hubs", json_route(hubs), methods=["GET"]),
        Route("/ui/api/health", json_route(health), methods=["GET"]),
        Mount("/ui/static", StaticFiles(directory=static_dir()), name="ui-static"),
    ]


def _by_method(**handlers: Endpoint) -> Endpoint:
    async def dispatch(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await handlers[method](request)
    return dispatch
