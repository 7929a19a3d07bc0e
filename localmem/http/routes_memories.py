"""The memory routes: store (one or a batch), get, update, delete, and by tag (list, delete)."""

from __future__ import annotations

import functools
import time
from typing import Any, NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from ..errors import NotFoundError, ValidationError
from ..store import CLEARABLE_FIELDS, STORE_FIELDS, UPDATE_FIELDS, MemoryStore
from ..tags import parse_tags, read_tag_field
from ..validation import HIDING_FIELDS, batch_not_current, not_current_note, validate_uuid
from ..request_body import read_json_object
from .endpoints import (
    MAX_BATCH,
    Endpoint,
    elapsed_ms,
    known_fields,
    locked,
    query_value,
    refuse_unknown_parameters,
    touch_memories,
    unknown_parameters,
    vector_channel,
    with_warnings,
)

# Path segments under /memory/ that are routes of their own, not ids.
RESERVED_MEMORY_PATHS = {"by-tag": "GET, DELETE", "batch": "POST"}


def unchanged_fields(fields: dict[str, Any]) -> list[str]:
    """What a PATCH body leaves as it is, said: null for a field (only t_invalid and
    relevance_score are cleared by it), or no field at all (AutoMem answers 200 either way)."""
    nulls = [name for name, value in fields.items() if value is None and name not in CLEARABLE_FIELDS]
    if len(nulls) == len(fields):
        return ["nothing to update: the body names no field with a value"
                + (f" ({', '.join(repr(n) for n in nulls)} were null, which leaves a field as it is)" if nulls else "")]
    if nulls:
        return [f"{', '.join(repr(n) for n in nulls)} were null, which leaves a field as it is "
                "(only t_invalid: null clears one)"]
    return []


def _memory_id(request: Request) -> str:
    memory_id = request.path_params["memory_id"]
    if memory_id in RESERVED_MEMORY_PATHS:
        raise HTTPException(405, headers={"Allow": RESERVED_MEMORY_PATHS[memory_id]})
    return validate_uuid(memory_id)


def _dedup_flag(value: Any) -> bool:
    """The body's ``dedup`` (docs/dedup.md): off unless asked, as AutoMem stores every write."""
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValidationError("'dedup' must be a boolean (true or false)")
    return value


class MemoryEndpoints(NamedTuple):
    store_memory: Endpoint
    store_batch: Endpoint
    get_memory: Endpoint
    update_memory: Endpoint
    delete_memory: Endpoint
    by_tag: Endpoint
    delete_by_tag: Endpoint


def memory_endpoints(store: MemoryStore) -> MemoryEndpoints:
    """The endpoints over ``store`` (each to be wrapped by ``endpoints.endpoint``)."""
    call = run_in_threadpool

    async def store_memory(request: Request) -> JSONResponse:
        start = time.perf_counter()
        payload = await read_json_object(request)
        fields = known_fields(payload, STORE_FIELDS | {"dedup", "redact"})
        fields.pop("content", None)
        dedup = _dedup_flag(fields.pop("dedup", None))
        redact = fields.pop("redact", False)  # off unless asked: AutoMem's behaviour (docs/privacy.md)
        notes = read_tag_field(fields)  # "a,b", "a;b", "a b", "#a": said in "warnings"

        def work() -> tuple[dict[str, Any], dict[str, Any], str, str]:
            # Embedded before the lock is taken (as the batch route): recalls go on while the model runs.
            prepared = store.prepare_many([{**fields, "content": payload.get("content")}], redact=redact)
            with locked(store):
                checked = store.store_many_checked(prepared, dedup=dedup)[0]
                record = store.get(checked["id"])
                if checked["deduped"]:
                    return checked, record, "existing", "existing"
                if fields.get("embedding") is not None:
                    return checked, record, "provided", "stored"
                if vector_channel(store):
                    return checked, record, "generated", "stored"
                return checked, record, "skipped", "embedder_unavailable" if store.embedder_error else "unconfigured"

        checked, record, embedding_status, vector_status = await call(work)
        hidden = None if checked["deduped"] else not_current_note(record, store.now())
        notes += [hidden] if hidden else []
        return JSONResponse({
            "deduped": checked["deduped"],
            **({"similar_existing": checked["similar_existing"]} if dedup else {}),
            **({"not_applied": checked["not_applied"]} if checked.get("not_applied") else {}),
            **({"warnings": notes} if notes else {}),
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
            "query_time_ms": elapsed_ms(start),
            "memory": record,
        }, status_code=200 if checked["deduped"] else 201)

    async def store_batch(request: Request) -> JSONResponse:
        start = time.perf_counter()
        payload = known_fields(await read_json_object(request), {"memories", "dedup", "redact"})
        dedup = _dedup_flag(payload.get("dedup"))
        items = payload.get("memories")
        if not isinstance(items, list) or not items:
            raise ValidationError("'memories' must be a non-empty array")
        if len(items) > MAX_BATCH:
            raise ValidationError(f"Batch size limit is {MAX_BATCH} memories per request")
        cleaned = []
        notes: list[str] = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValidationError(f"Memory at index {index} must be an object")
            cleaned.append(known_fields(item, STORE_FIELDS, f"Memory at index {index}: "))
            notes.extend(read_tag_field(cleaned[-1], where=f"Memory at index {index}: "))
        provided = sum(1 for item in cleaned if item.get("embedding") is not None)

        def work() -> tuple[list[dict[str, Any]], bool, list[str]]:
            # Embedded before the lock is taken: recalls go on while the model runs on up to MAX_BATCH texts.
            prepared = store.prepare_many(cleaned, redact=payload.get("redact", False))
            with locked(store):
                results = store.store_many_checked(prepared, dedup=dedup)
                written = [(f"Memory at index {i}: ", store.get(r["id"])) for i, r in enumerate(results)
                           if not r["deduped"] and any(k in cleaned[i] for k in HIDING_FIELDS)]
                return results, vector_channel(store), batch_not_current(written, store.now())

        results, vectors_ok, hidden = await call(work)
        notes += hidden
        ids = [r["id"] for r in results]
        deduped = sum(1 for r in results if r["deduped"])
        stored_vectors = len(ids) - deduped if vectors_ok else provided
        return JSONResponse({
            "status": "success",
            "stored": len(ids) - deduped,
            "memory_ids": ids,
            **({"deduped_count": deduped, "items": results} if dedup else {}),
            # "qdrant" is kept: AutoMem's MCP client shows it for batches (the vector index's count).
            "qdrant": f"stored ({stored_vectors})" if stored_vectors else "unconfigured",
            "vector_index": f"stored ({stored_vectors})" if stored_vectors else "unconfigured",
            "embedding_status": ("provided" if provided == len(ids) else
                                 "generated" if vectors_ok else
                                 "partial" if provided else "skipped"),
            "enrichment": "disabled",
            "query_time_ms": elapsed_ms(start),
            **({"warnings": notes} if notes else {}),
        }, status_code=201)

    async def get_memory(request: Request) -> JSONResponse:
        memory_id = _memory_id(request)

        def work() -> dict[str, Any]:
            with locked(store):
                record = store.get(memory_id)
                touch_memories(store, [record["id"]])
                return record

        return JSONResponse({"status": "success", "memory": await call(work)})

    async def update_memory(request: Request) -> JSONResponse:
        memory_id = _memory_id(request)
        payload = await read_json_object(request)
        echoed = payload.pop("memory_id", memory_id)  # some clients repeat the path's id
        if not isinstance(echoed, str) or echoed.strip().lower() != memory_id.strip().lower():
            raise ValidationError(f"'memory_id' in the body ({echoed!r}) is not the id in the path ({memory_id})")
        fields = known_fields(payload, UPDATE_FIELDS | {"redact"})
        redact = fields.pop("redact", False)  # off unless asked, as for POST /memory (docs/privacy.md)
        notes = read_tag_field(fields) + unchanged_fields(fields)
        record = await call(functools.partial(store.update, memory_id, redact=redact, **fields))
        hidden = not_current_note(record, store.now())
        notes += [hidden] if hidden else []
        return JSONResponse({"status": "success", "memory_id": record["id"], "memory": record,
                             **({"warnings": notes} if notes else {})})

    async def delete_memory(request: Request) -> JSONResponse:
        memory_id = _memory_id(request)
        refuse_unknown_parameters(request, ())
        await call(store.delete, memory_id)
        return JSONResponse({"status": "success", "memory_id": memory_id})

    def _tag_args(request: Request) -> tuple[list[str] | None, str | None, str | None]:
        # Repeated ``tags``, each read as every tag input is (store.by_tag: tags.parse_tags).
        tags = request.query_params.getlist("tags") or None
        return tags, query_value(request, "limit"), query_value(request, "offset")

    async def by_tag(request: Request) -> JSONResponse:
        tags, limit, offset = _tag_args(request)

        def work() -> dict[str, Any]:
            with locked(store):
                result = store.by_tag(tags, limit=limit, offset=offset)
                touch_memories(store, [m["id"] for m in result["memories"]])
                return with_warnings(result, unknown_parameters(request, ("tags", "limit", "offset")))

        return JSONResponse(await call(work))

    async def delete_by_tag(request: Request) -> JSONResponse:
        refuse_unknown_parameters(request, ("tags",))  # limit/offset too: every memory with a tag goes
        tags, _, _ = _tag_args(request)
        guessed = parse_tags(tags).notes  # a delete does not guess: "project alpha" is not two tags here
        if guessed:
            raise ValidationError(f"{guessed[0]}; nothing was deleted: give each tag as it is stored "
                                  "(repeat 'tags' or separate them with commas)")

        def work() -> tuple[list[str], list[str], int]:
            deleted = 0
            with locked(store):
                while True:
                    page = store.by_tag(tags, limit=200, offset=0)
                    if not page["memories"]:
                        return page["tags"], page.get("warnings", []), deleted
                    for memory in page["memories"]:
                        try:
                            store.delete(memory["id"])
                        except NotFoundError:
                            continue
                        deleted += 1

        wanted, notes, deleted = await call(work)
        return JSONResponse({"status": "success", "tags": wanted, "deleted_count": deleted,
                             **({"warnings": notes} if notes else {})})

    return MemoryEndpoints(store_memory, store_batch, get_memory, update_memory, delete_memory, by_tag, delete_by_tag)
