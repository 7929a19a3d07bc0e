"""What a push sends: the server's profile, and each memory and edge as the server takes it.

Two kinds of server speak this API, and they differ in what they keep:

* AutoMem ignores a caller-supplied ``id`` (it assigns its own), its
  ``POST /memory/batch`` drops ``embedding``, ``t_valid``, ``t_invalid``,
  ``updated_at`` and ``last_accessed``, its ``PATCH`` takes no ``embedding``
  (a changed content is re-embedded by its own provider), it keeps only the
  edge properties its registry lists for each relation type, and its
  enrichment worker adds ``entity:*`` tags and the ``entities`` /
  ``enrichment`` metadata keys after a memory arrives.
* localmem (``localmem serve``) keeps all of it, and honours the ``id``.

A pushed memory carries its local id in ``metadata.localmem_id``: with it a
push that lost a server's answer can find what it created.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..relations import RELATION_TYPES
from .conflict_copy import CONFLICT_KEY
from .push_map import fingerprint

MARKER = "localmem_id"
# Metadata keys that hold memory ids (translated to the server's ids), and a conflict copy's marker
# (``metadata.sync_conflict.memory_id``: the memory it lost to).
ID_REFERENCES = ("superseded_by",)
# What AutoMem's enrichment adds to a memory; a PATCH of tags or metadata keeps them.
SERVER_METADATA = ("entities", "enrichment")
SERVER_TAG_PREFIX = "entity:"
# Fields whose change makes a memory worth a PATCH (updated_at rides along).
AUTOMEM_FIELDS = ("content", "tags", "type", "importance", "confidence", "timestamp",
                  "t_valid", "t_invalid", "metadata")
LOCALMEM_FIELDS = AUTOMEM_FIELDS + ("summary", "context", "archived", "relevance_score")


@dataclass(frozen=True)
class ServerProfile:
    """What the server is and keeps, from its ``GET /health``."""

    kind: str  # "localmem" or "automem" (any other server is treated as AutoMem)
    vector_size: int | None  # None: no vector store, or not shown to this token
    embedder: str | None  # localmem's embedder name (AutoMem does not say)

    @property
    def localmem(self) -> bool:
        return self.kind == "localmem"

    @property
    def fields(self) -> tuple[str, ...]:
        return LOCALMEM_FIELDS if self.localmem else AUTOMEM_FIELDS

    def embedding_plan(self, dims: int | None, local_embedder: str | None) -> tuple[bool, str]:
        """Whether to send the local vectors, and the reason to print."""
        if dims is None:
            return False, "the local store has no vectors; the server embeds"
        if self.vector_size is None:
            return False, "the server shows no vector size; it embeds"
        if self.vector_size != dims:
            return False, (f"the server's vectors have {self.vector_size} dimensions and the local ones "
                           f"{dims}; the server embeds")
        if self.localmem and self.embedder and local_embedder and self.embedder != local_embedder:
            return False, (f"the server embeds with {self.embedder!r}, the local store with "
                           f"{local_embedder!r}; the server embeds")
        return True, f"embeddings sent ({dims} dimensions, as the server's)"

    def batch_keeps(self, payload: dict[str, Any]) -> bool:
        """Whether ``POST /memory/batch`` stores this memory as it is (else ``POST /memory``)."""
        if self.localmem:
            return True
        return ("embedding" not in payload and payload.get("t_invalid") is None
                and payload.get("t_valid") in (None, payload["timestamp"])
                and payload.get("updated_at") in (None, payload["timestamp"]))

    def keeps_edge_property(self, relation: str, name: str) -> bool:
        if self.localmem:
            return True
        known = RELATION_TYPES.get(relation)
        return known is not None and (name in known.properties or name in ("strength",))


def read_profile(health: Any) -> ServerProfile:
    body = health if isinstance(health, dict) else {}
    kind = "localmem" if body.get("service") == "localmem" else "automem"
    dims = body.get("vector_dimensions")
    size = None
    # AutoMem says whether Qdrant is there; localmem has no "qdrant" (its vectors are in the file).
    if isinstance(dims, dict) and body.get("qdrant", "connected") == "connected":
        for key in ("collection", "effective", "configured"):
            if isinstance(dims.get(key), int) and dims[key] > 0:
                size = dims[key]
                break
    embedder = body.get("embedder", {}).get("name") if isinstance(body.get("embedder"), dict) else None
    return ServerProfile(kind, size, embedder)


def as_floats(blob: bytes | None) -> list[float] | None:
    if blob is None:
        return None
    values = array("f")
    values.frombytes(blob)
    return [float(v) for v in values]


def referenced_ids(metadata: dict[str, Any]) -> list[str]:
    """The memory ids ``metadata`` names: ``ID_REFERENCES`` and a conflict copy's marker."""
    refs = [metadata[key] for key in ID_REFERENCES if isinstance(metadata.get(key), str)]
    marker = metadata.get(CONFLICT_KEY)
    if isinstance(marker, dict) and isinstance(marker.get("memory_id"), str):
        refs.append(marker["memory_id"])
    return refs


def translate_ids(metadata: dict[str, Any], translate: Callable[[str], str | None]
                  ) -> tuple[dict[str, Any], list[str]]:
    """``metadata`` with each memory id it names (``referenced_ids``) as ``translate`` gives it, and the
    keys (``superseded_by``, ``CONFLICT_KEY``) whose id it gave None for: those are left as they were."""
    out, missing = dict(metadata), []
    for key in ID_REFERENCES:
        ref = out.get(key)
        if isinstance(ref, str):
            translated = translate(ref)
            if translated is None:
                missing.append(key)
            else:
                out[key] = translated
    marker = out.get(CONFLICT_KEY)
    if isinstance(marker, dict) and isinstance(marker.get("memory_id"), str):
        translated = translate(marker["memory_id"])
        if translated is None:
            missing.append(CONFLICT_KEY)
        else:
            out[CONFLICT_KEY] = {**marker, "memory_id": translated}
    return out, missing


def memory_payload(row: dict[str, Any], profile: ServerProfile, remote_ids: dict[str, str],
                   *, with_embedding: bool) -> tuple[dict[str, Any], bool]:
    """The ``POST /memory`` body of a memory row, and whether every id it names was translated.

    An id in ``metadata.superseded_by`` whose memory the server does not have
    yet is left out (and the memory sent again once it has); a conflict copy's
    marker names the server's id of the memory it lost to (this store's until
    the server has it, and the copy is sent again then).
    """
    metadata, missing = translate_ids(json.loads(row["metadata"]) if row.get("metadata") else {}, remote_ids.get)
    for key in ID_REFERENCES:
        if key in missing:
            del metadata[key]
    # A conflict copy's marker keeps this store's id until the server has the winner: resent then.
    complete = not missing
    metadata[MARKER] = row["id"]
    payload: dict[str, Any] = {
        "content": row["content"],
        "tags": json.loads(row["tags"]) if row.get("tags") else [],
        "type": row["type"],
        "importance": row["importance"],
        "confidence": row["confidence"],
        "timestamp": row["timestamp"],
        "t_valid": row["t_valid"],
        "t_invalid": row["t_invalid"],
        "updated_at": row["updated_at"],
        "last_accessed": row["last_accessed"],
        "metadata": metadata,
    }
    if profile.localmem:
        payload.update({"id": row["id"], "summary": row["summary"], "context": row["context"],
                        "archived": bool(row["archived"]), "relevance_score": row["relevance_score"]})
    if with_embedding and row.get("embedding") is not None:
        payload["embedding"] = as_floats(row["embedding"])
    return payload, complete


def field_hashes(payload: dict[str, Any], profile: ServerProfile, *, complete: bool = True) -> dict[str, str]:
    """A hash per tracked field of what is sent; an incomplete metadata gets none (so it is resent)."""
    hashes = {name: fingerprint(payload.get(name)) for name in profile.fields}
    if not complete:
        hashes["metadata"] = ""
    return hashes


def merge_server_additions(patch: dict[str, Any], remote: dict[str, Any]) -> dict[str, Any]:
    """Keep what AutoMem's enrichment added (entity tags, entities/enrichment metadata)
    when a PATCH replaces the tags or the metadata."""
    merged = dict(patch)
    if "tags" in patch:
        mine = {t.lower() for t in patch["tags"]}
        added = [t for t in remote.get("tags") or [] if isinstance(t, str)
                 and t.lower().startswith(SERVER_TAG_PREFIX) and t.lower() not in mine]
        merged["tags"] = list(patch["tags"]) + added
    if "metadata" in patch:
        theirs = remote.get("metadata")
        if isinstance(theirs, str):
            try:
                theirs = json.loads(theirs)
            except ValueError:
                theirs = {}
        if isinstance(theirs, dict):
            metadata = dict(patch["metadata"])
            for key in SERVER_METADATA:
                if key in theirs and key not in metadata:
                    metadata[key] = theirs[key]
            merged["metadata"] = metadata
    return merged


def edge_payload(edge: dict[str, Any]) -> dict[str, Any]:
    """One item of ``POST /associate``'s ``associations``."""
    properties = json.loads(edge["properties"]) if edge.get("properties") else {}
    return {**properties, "memory1_id": edge["src_remote"], "memory2_id": edge["dst_remote"],
            "type": edge["type"], "strength": edge["strength"]}
