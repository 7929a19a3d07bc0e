"""The recall routes: AutoMem's GET /recall and Kagura's POST /api/v1/memory/recall."""

from __future__ import annotations

import functools
import inspect
from typing import Any, NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import ValidationError
from ..kagura import RequestValidationError, parse_request, restrict_contexts
from ..kagura.request import REQUEST_FIELDS as RECALL_V1_FIELDS
from ..recall.params import ALIASES as RECALL_ALIASES
from ..recall.params import PARAMETERS as RECALL_PARAMETERS
from ..store import MemoryStore
from .authentication import CONTEXTS_SCOPE_KEY
from ..request_body import read_json_object
from .endpoints import Endpoint, error_response, query_value, unknown_parameters, with_warnings

# Query-string parameters of GET /recall that take every repeated value
# (recall's parser splits them on commas; ``tags`` and ``exclude_tags`` also on
# semicolons and spaces, as every tag input is read: localmem.tags.parse_tags).
RECALL_MULTI_VALUE = frozenset({"tags", "queries", "exclude_tags", "context_tags",
                                "context_types", "priority_ids"})
RECALL_KNOWN = RECALL_PARAMETERS | frozenset(RECALL_ALIASES)


class RecallEndpoints(NamedTuple):
    recall: Endpoint
    recall_v1: Endpoint


def recall_endpoints(store: MemoryStore) -> RecallEndpoints:
    """The endpoints over ``store`` (each to be wrapped by ``endpoints.endpoint``)."""
    call = run_in_threadpool

    async def recall(request: Request) -> JSONResponse:
        raw = recall_params(request)
        body = await call(functools.partial(store.recall, **raw))
        return JSONResponse(with_warnings(body, ignored_recall_parameters(request)))

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

    return RecallEndpoints(recall, recall_v1)


def ignored_recall_parameters(request: Request) -> list[str]:
    """What GET /recall ignores, said: unknown parameters, and an ``offset`` other than 0 (recall
    does not page; AutoMem's MCP client sends ``offset`` and ``format``, which it uses itself)."""
    notes = unknown_parameters(request, RECALL_KNOWN | {"format", "offset"})
    if any(v.strip() not in ("", "0") for v in request.query_params.getlist("offset")):
        notes.append("'offset' was ignored: recall does not page; raise 'limit' instead")
    return notes


def recall_params(request: Request) -> dict[str, Any]:
    """GET /recall's query string as ``store.recall`` keyword arguments.

    List parameters keep every repeated value (recall splits each of them
    on commas); the others take their one value (two different ones are a 400:
    ``query_value``), and blank ones are dropped. Parameters recall does not know
    (``format``, ``offset`` sent by AutoMem's MCP client, ``api_key``) are left out, as
    AutoMem does, and said (``ignored_recall_parameters``). Canonical names come before
    their aliases, so a conflict names the alias.
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
        value = query_value(request, key)
        if value is not None:
            raw[key] = value
    return raw
