"""The edge routes: associate (one or a batch), dissociate, and a memory's related memories."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import LocalMemError, ValidationError
from ..store import EDGE_PROPERTIES, MemoryStore
from ..request_body import read_json_object
from .endpoints import (MAX_BATCH, Endpoint, error_response, known_fields, query_value, refuse_unknown_parameters,
                        unknown_parameters, with_warnings)

ASSOCIATION_FIELDS = frozenset({"memory1_id", "memory2_id", "type", "strength"})


class EdgeEndpoints(NamedTuple):
    associate: Endpoint
    dissociate: Endpoint
    related: Endpoint


def edge_endpoints(store: MemoryStore) -> EdgeEndpoints:
    """The endpoints over ``store`` (each to be wrapped by ``endpoints.endpoint``)."""
    call = run_in_threadpool

    def _association_args(item: dict[str, Any], where: str = "") -> dict[str, Any]:
        properties = known_fields(item, EDGE_PROPERTIES | ASSOCIATION_FIELDS, where)
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
            return await associate_batch(known_fields(payload, {"associations"})["associations"])
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
        refuse_unknown_parameters(request, names)  # a misspelt 'typ' would remove every type
        args: dict[str, Any] = {k: v for k in names if (v := query_value(request, k)) is not None}
        required = ValidationError("'memory1_id' and 'memory2_id' are required "
                                   "(as query parameters or in a JSON body)")
        has_body = (request.headers.get("content-length", "0") != "0"
                    or "transfer-encoding" in request.headers)
        if not args and not has_body:
            raise required
        if not args:  # a body: a JSON object of these fields, as every route takes it (415, 400 otherwise)
            args = known_fields(await read_json_object(request), names)
        elif has_body and await read_json_object(request):  # the body would go unread: its type, say
            raise ValidationError("name the edge by query parameters or by a JSON body, not both")
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

    async def related(request: Request) -> JSONResponse:
        memory_id = request.path_params["memory_id"]
        types = [t for t in request.query_params.getlist("relationship_types") if t.strip()]
        result = await call(functools.partial(
            store.related, memory_id,
            relationship_types=",".join(types) if types else None,
            max_depth=query_value(request, "max_depth"),
            limit=query_value(request, "limit"),
        ))
        return JSONResponse(with_warnings(result, unknown_parameters(
            request, ("relationship_types", "max_depth", "limit"))))

    return EdgeEndpoints(associate, dissociate, related)
