"""The current-state filter: hide archived, not-yet-valid, expired and superseded
memories, and put the head of a supersession chain in a superseded memory's place."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Callable

from ..storage.records import rows_as_dicts, to_record
from ..timeparse import format_timestamp

if TYPE_CHECKING:
    from ..storage.backend import Backend

MAX_SUPERSESSION_HOPS = 5


def state_reason(memory: dict[str, Any], now_iso: str) -> str | None:
    """Why a memory is not current, leaving supersession aside (AutoMem's reason order)."""
    if memory.get("archived"):
        return "archived"
    if memory.get("t_valid") and memory["t_valid"] > now_iso:
        return "not_yet_valid"
    if memory.get("t_invalid") and memory["t_invalid"] <= now_iso:
        return "expired"
    return None


def active_replacements(backend: "Backend", memory_ids: list[str],
                        now_iso: str) -> dict[str, dict[str, Any]]:
    """For each id that a supersession chain leads away from, its current head.

    One recursive CTE walks every chain (≤ 5 hops, cycle-safe); the head is
    the deepest node on the walk that is itself current. The first hop's
    relation type and strength are kept as provenance.
    """
    if not memory_ids:
        return {}
    rows = rows_as_dicts(backend.conn.execute(backend.sql["state_replacements"], {
        "ids": json.dumps(memory_ids), "max_depth": MAX_SUPERSESSION_HOPS}))
    heads: dict[str, dict[str, Any]] = {}
    for row in rows:  # ordered by origin, then depth: deeper current nodes overwrite
        memory = to_record(row)
        if memory["id"] == row["origin_id"] or state_reason(memory, now_iso) is not None:
            continue
        heads[row["origin_id"]] = {
            "memory": memory,
            "relation_type": row["relation_type"],
            "strength": float(row["relation_strength"] or 0.0),
            "pk": row.get("pk"),  # so the keyword channel can score a head put in its place
        }
    return heads


class SupersessionHeads:
    """``active_replacements`` for one recall: each memory's head is looked up once.

    A recall reads one snapshot, so a memory's head cannot change within it,
    and its stages ask about the same memories (the state filter about every
    candidate, the confidence block again about the nearest of them).
    """

    def __init__(self, backend: "Backend", now_iso: str) -> None:
        self.backend = backend
        self.now_iso = now_iso
        self._known: dict[str, dict[str, Any] | None] = {}

    def __call__(self, memory_ids: list[str]) -> dict[str, dict[str, Any]]:
        """As active_replacements(backend, memory_ids, now_iso)."""
        missing = [i for i in dict.fromkeys(memory_ids) if i not in self._known]
        if missing:
            found = active_replacements(self.backend, missing, self.now_iso)
            for memory_id in missing:
                self._known[memory_id] = found.get(memory_id)
        heads = {}
        for memory_id in memory_ids:
            head = self._known[memory_id]
            if head is not None:
                heads[memory_id] = head
        return heads


def shown_status(reason: str | None, head: dict[str, Any] | None) -> str:
    """The state a person is shown: ``current``, ``superseded``, ``expired``, ``archived`` or
    ``not_yet_valid``.

    ``supersede`` also sets the old memory's ``t_invalid``, so recall's reason
    for hiding it reads ``expired`` (AutoMem's order); but a memory with a
    current successor is superseded, and that is what it is called here. An
    archived or not-yet-valid memory keeps that reason (its successor is named
    beside it).
    """
    if head is not None and reason in (None, "expired"):
        return "superseded"
    return reason or "current"


def memory_state(backend: "Backend", memory: dict[str, Any], now_iso: str) -> dict[str, Any]:
    """Whether recall's current-state filter keeps ``memory``, and if not, why.

    ``status`` is ``current`` or why recall hides it (``archived``,
    ``not_yet_valid``, ``expired``, ``superseded``: see :func:`shown_status`);
    ``superseded_by`` is the current memory recall shows in its place (the
    head of its supersession chain), with the first hop's ``relation_type``.
    """
    head = active_replacements(backend, [memory["id"]], now_iso).get(memory["id"])
    return _state_of(memory, head, now_iso)


def _state_of(memory: dict[str, Any], head: dict[str, Any] | None, now_iso: str) -> dict[str, Any]:
    status = shown_status(state_reason(memory, now_iso), head)
    state: dict[str, Any] = {"status": status, "current": status == "current"}
    if head is not None:
        state["superseded_by"] = head["memory"]["id"]
        state["relation_type"] = head["relation_type"]
    return state


def memory_states(backend: "Backend", memories: list[dict[str, Any]], now_iso: str) -> dict[str, dict[str, Any]]:
    """:func:`memory_state` for a page of records (one chain walk for them all), by id."""
    heads = active_replacements(backend, [m["id"] for m in memories], now_iso)
    return {m["id"]: _state_of(m, heads.get(m["id"]), now_iso) for m in memories}


def without_current_successor(backend: "Backend", now_iso: str) -> list[str]:
    """Memories with an outgoing supersession edge whose chain reaches no current memory:
    recall does not treat them as superseded (browse's state filter needs them named)."""
    unsettled = [memory_id for memory_id, first_hop_current in backend.conn.execute(
        backend.sql["memories_with_successor"], {"now": now_iso}) if not first_hop_current]
    heads = active_replacements(backend, unsettled, now_iso)  # the walk, for the few that need it
    return [i for i in unsettled if i not in heads]


def still_hidden_warning(backend: "Backend", memory: dict[str, Any], now_iso: str) -> str | None:
    """Why recall still hides ``memory`` once a supersession edge away from it is gone, or None
    when it is current again (``dissociate``'s warning, with the way out)."""
    state = memory_state(backend, memory, now_iso)
    if state["current"]:
        return None
    why = {"expired": f"its t_invalid ({memory['t_invalid']}) has passed (supersede sets "
                      "it); clear t_invalid to make it current again",
           "superseded": f"it is still superseded by {state.get('superseded_by')}",
           "archived": "it is archived",
           "not_yet_valid": f"it is not valid before {memory['t_valid']}"}[state["status"]]
    return f"{memory['id']} is still not current, so recall still hides it: {why}"


STATE_REASONS = ("archived", "not_yet_valid", "expired", "superseded")


def state_counts(backend: "Backend", now_iso: str) -> dict[str, int]:
    """How many memories recall's current-state filter hides, by reason, and how many it keeps.

    The same rules as :func:`apply_state_filter` (``state_reason`` first,
    then :func:`active_replacements`), over every memory in the store, each
    counted under the status :func:`shown_status` gives it (a memory
    ``supersede`` replaced is ``superseded``, though its ``t_invalid`` has
    passed too); ``replaced`` counts every hidden memory that has a current
    successor.
    """
    counts = dict.fromkeys(STATE_REASONS, 0)
    with_successor: list[str] = []
    expired_with_successor: set[str] = set()
    unexplained: set[str] = set()
    total = 0
    for memory_id, archived, t_valid, t_invalid, has_successor in backend.conn.execute(
            backend.sql["state_columns"]):
        total += 1
        reason = state_reason({"archived": archived, "t_valid": t_valid, "t_invalid": t_invalid}, now_iso)
        if reason is not None:
            counts[reason] += 1
        if has_successor:
            with_successor.append(memory_id)
            if reason is None:
                unexplained.add(memory_id)
            elif reason == "expired":
                expired_with_successor.add(memory_id)
    # Which have a current successor (walking only the chains whose first hop is not current).
    with_head = set(with_successor) - set(without_current_successor(backend, now_iso))
    counts["superseded"] = len((unexplained | expired_with_successor) & with_head)
    counts["expired"] -= len(expired_with_successor & with_head)
    hidden = sum(counts.values())
    # ``replaced``: hidden memories (for any reason) that recall shows a current successor for.
    return {"current": total - hidden, "not_current": hidden, **counts, "replaced": len(with_head)}


def apply_state_filter(backend: "Backend", results: list[dict[str, Any]], now: datetime,
                       debug: bool, replacement_allowed: Callable[[dict[str, Any]], bool],
                       heads_of: Callable[[list[str]], dict[str, dict[str, Any]]] | None = None,
                       ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Drop results that are not current, injecting supersession heads in their place.

    ``replacement_allowed`` says whether a head passes the request's scope
    (time window, tags, exclude_tags); a head outside it is not injected.
    A head already ranked above the memory it replaces stays where it is; one
    ranked below it moves up into the replaced memory's place, unless it is
    hidden itself (a supersession cycle hides every memory on it). ``heads_of``: a
    recall's SupersessionHeads (default: active_replacements at ``now``).
    """
    now_iso = format_timestamp(now)
    ids = [r["id"] for r in results]
    heads = heads_of(ids) if heads_of is not None else active_replacements(backend, ids, now_iso)
    listed = {r["id"] for r in results}
    present: set[str] = set()  # ids placed so far, in rank order
    kept: list[dict[str, Any]] = []
    suppressed: list[dict[str, Any]] = []
    replacements: list[dict[str, Any]] = []
    for result in results:
        if result["id"] in present:  # a head that was moved up already
            continue
        reason = state_reason(result["memory"], now_iso)
        head = heads.get(result["id"])
        if reason is None and head is not None:
            reason = "superseded"
        if reason is None:
            present.add(result["id"])
            kept.append(result)
            continue
        entry: dict[str, Any] = {"id": result["id"], "reason": reason}
        if head is not None:
            head_id = head["memory"]["id"]
            entry["replacement_id"] = head_id
            entry["relation_type"] = head["relation_type"]
            hidden_itself = head_id in listed and head_id in heads  # listed, and replaced in turn
            if head_id not in present and not hidden_itself and replacement_allowed(head["memory"]):
                present.add(head_id)
                kept.append({
                    "id": head_id,
                    "score": result.get("final_score", 0.0),
                    "match_score": result.get("match_score", 0.0),
                    "match_type": "state_replacement",
                    "source": "graph",
                    "memory": head["memory"],
                    "relations": [{"type": head["relation_type"], "strength": head["strength"],
                                   "from": result["id"]}],
                    "state_replaces": result["id"],
                    "final_score": result.get("final_score", 0.0),
                    "original_score": result.get("original_score", 0.0),
                    "score_components": dict(result.get("score_components") or {}),
                    "_query": result.get("_query", ""),
                    **({"_pk": head["pk"]} if head.get("pk") is not None else {}),
                })
                replacements.append({"id": head_id, "replaces_id": result["id"],
                                     "relation_type": head["relation_type"]})
        suppressed.append(entry)
    block: dict[str, Any] = {
        "current_only": True,
        "suppressed_count": len(suppressed),
        "replacement_count": len(replacements),
    }
    if debug:
        block["suppressed"] = suppressed
        block["replacements"] = replacements
    return kept, block
