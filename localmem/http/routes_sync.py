"""The routes ``localmem sync URL`` talks to: a store's side of a sync, over HTTP.

``POST /sync/hello``, ``/sync/page``, ``/sync/states``, ``/sync/edge-states``, ``/sync/memory-edges``,
``/sync/put``, ``/sync/put-edges``, ``/sync/bases``, ``/sync/sent``, ``/sync/seen``: the methods of
``replication.sync_side.StoreSide``, with JSON bodies (``replication.sync_wire``; ``/sync/hello`` names the
``features`` a client may use: ``wire.FEATURES``),
at most ``sync_wire.MAX_ITEMS`` states per request. Behind the API token like every
route but /health; a recall-only (scoped) token cannot call them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import ValidationError
from ..replication import sync_wire as wire
from ..replication.sync_side import PAGE, StoreSide
from ..request_body import read_json_object
from ..store import MemoryStore
from ..validation import validate_int, validate_uuid
from .endpoints import Endpoint, known_fields

MAX_SEQ = 2 ** 62


class SyncEndpoints(NamedTuple):
    hello: Endpoint
    page: Endpoint
    states: Endpoint
    edge_states: Endpoint
    memory_edges: Endpoint
    put: Endpoint
    put_edges: Endpoint
    bases: Endpoint
    sent: Endpoint
    seen: Endpoint


def _peer(payload: dict[str, Any]) -> str:
    peer = payload.get("peer")
    if not isinstance(peer, str) or not wire.STORE_ID.fullmatch(peer):
        raise ValidationError("'peer' must be a store id (32 hexadecimal characters)")
    return peer


def _seq(payload: dict[str, Any], field: str) -> int:
    if payload.get(field) is None:
        raise ValidationError(f"'{field}' is required: a change number")
    return validate_int(payload.get(field), field, default=0, minimum=0, maximum=MAX_SEQ)


def sync_endpoints(store: MemoryStore) -> SyncEndpoints:
    """The endpoints over ``store`` (each to be wrapped by ``endpoints.endpoint``)."""

    def side() -> StoreSide:
        return StoreSide(store, "server")

    async def body(request: Request, fields: set[str]) -> dict[str, Any]:
        return known_fields(await read_json_object(request), fields)

    async def hello(request: Request) -> JSONResponse:
        peer = _peer(await body(request, {"peer"}))

        def work() -> dict[str, Any]:
            here = side()
            if not store.read_only:
                here.settle_pins()  # what a sync killed mid-batch left to pin, before any page is read
            return {"status": "success", "store_id": here.store_id, "clock": here.clock(),
                    "sent_to": here.sent_to(peer), "wall_ms": here.wall_ms(), "pair_token": here.pair_token(peer),
                    "features": list(wire.FEATURES)}
        return JSONResponse(await run_in_threadpool(work))

    async def page(request: Request) -> JSONResponse:
        payload = await body(request, {"kind", "after", "until", "limit", "peer"})
        after, until, peer = _seq(payload, "after"), _seq(payload, "until"), _peer(payload)
        limit = validate_int(payload.get("limit"), "limit", default=PAGE, minimum=1, maximum=wire.MAX_ITEMS)
        items, last = await run_in_threadpool(side().page, payload.get("kind"), after, until, peer, limit)
        encode = wire.edge_to_json if payload.get("kind") == "edges" else wire.memory_to_json
        return JSONResponse({"status": "success", "items": [encode(i) for i in items], "last": last})

    async def states(request: Request) -> JSONResponse:
        ids = wire.items((await body(request, {"ids"})).get("ids"), "ids")
        ids = [validate_uuid(i, f"ids[{n}]") for n, i in enumerate(ids)]
        found = await run_in_threadpool(side().memory_states, ids)
        return JSONResponse({"status": "success", "states": [wire.memory_to_json(s) for s in found.values()]})

    async def edge_states(request: Request) -> JSONResponse:
        keys = wire.items((await body(request, {"keys"})).get("keys"), "keys")
        keys = [wire.edge_key(k, f"keys[{n}]") for n, k in enumerate(keys)]
        found = await run_in_threadpool(side().edge_states, keys)
        return JSONResponse({"status": "success", "states": [wire.edge_to_json(s) for s in found.values()]})

    async def memory_edges(request: Request) -> JSONResponse:
        ids = wire.items((await body(request, {"ids"})).get("ids"), "ids")
        ids = [validate_uuid(i, f"ids[{n}]") for n, i in enumerate(ids)]
        found = await run_in_threadpool(side().memory_edges, ids)
        return JSONResponse({"status": "success", "states": [wire.edge_to_json(s) for s in found]})

    async def put(request: Request) -> JSONResponse:
        payload = await body(request, {"states", "peer"})
        given, peer = wire.items(payload.get("states"), "states"), _peer(payload)
        parsed = [wire.memory_from_json(s, f"states[{n}]") for n, s in enumerate(given)]
        expect = {state.id: version for n, (state, item) in enumerate(zip(parsed, given))
                  if (version := wire.expected_version(item, f"states[{n}]")) is not None}
        refused = await run_in_threadpool(side().put_memories, parsed, peer, expect)
        return JSONResponse({"status": "success", "refused": [list(r) for r in refused]})

    async def put_edges(request: Request) -> JSONResponse:
        payload = await body(request, {"edges", "peer"})
        given, peer = wire.items(payload.get("edges"), "edges"), _peer(payload)
        parsed = [wire.edge_from_json(s, f"edges[{n}]") for n, s in enumerate(given)]
        refused = await run_in_threadpool(side().put_edges, parsed, peer)
        return JSONResponse({"status": "success", "refused": [[list(key), why] for key, why in refused]})

    async def bases(request: Request) -> JSONResponse:
        payload = await body(request, {"peer", "versions"})
        peer, given = _peer(payload), wire.items(payload.get("versions"), "versions")
        versions = dict(wire.base_entry(item, f"versions[{n}]") for n, item in enumerate(given))
        await run_in_threadpool(side().record_bases, peer, versions)
        return JSONResponse({"status": "success"})

    async def sent(request: Request) -> JSONResponse:
        payload = await body(request, {"peer", "sent_seq", "token"})
        peer, seq, token = _peer(payload), _seq(payload, "sent_seq"), payload.get("token")
        if token is not None and not (isinstance(token, str) and wire.STORE_ID.fullmatch(token)):
            raise ValidationError("'token' must be 32 hexadecimal characters")
        await run_in_threadpool(side().record_sent, peer, seq, token)
        return JSONResponse({"status": "success"})

    async def seen(request: Request) -> JSONResponse:
        payload = await body(request, {"seen", "expect"})
        given = wire.items(payload.get("seen"), "seen")
        summaries = dict(wire.seen_entry(item, f"seen[{n}]") for n, item in enumerate(given))
        # With ``expect`` (wire.SEEN_EXPECT), each memory joins only if still at the version the sync left
        # here, checked in the join's transaction; without it (an older client, which read just before), all do.
        expect = None if payload.get("expect") is None else wire.seen_expected(payload["expect"], list(summaries),
                                                                                "expect")
        await run_in_threadpool(side().record_seen, summaries, expect)
        return JSONResponse({"status": "success"})

    return SyncEndpoints(hello, page, states, edge_states, memory_edges, put, put_edges, bases, sent, seen)
