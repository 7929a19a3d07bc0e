"""The edges of a push: new and changed ones in ``POST /associate`` batches, removed ones with
``DELETE /associate`` where the server has that route (localmem does; AutoMem answers 405,
so the removal is reported as skipped and the server keeps the edge).

Only edges between two memories the server has are sent; relation types the API cannot
author (SIMILAR_TO, PRECEDED_BY, DISCOVERED: made by the server itself) are skipped; edge
properties AutoMem's registry does not list for a type are sent and named in a note, since
AutoMem drops them.
"""

from __future__ import annotations

from typing import Any

from ..relations import AUTHORABLE_TYPES
from .push_wire import edge_payload

# The push (``push.Pusher``) these run for; not imported, since push imports this module.
Pusher = Any


def chunks(items: list[Any], size: int) -> list[list[Any]]:
    return [items[start:start + size] for start in range(0, len(items), size)]


def push_edges(self: Pusher) -> None:
    edges = self.map.edges_to_send()
    unsent = self.map.edges_unsent()
    if unsent:
        self.summary.edges.skipped += unsent
        self.summary.skipped.append({"kind": "edge", "id": f"{unsent} edges",
                                     "reason": "one of their memories is not on the server "
                                               "(outside --tags, or it failed)"})
    sendable = []
    dropped: dict[str, int] = {}
    for edge in edges:
        if edge["type"] not in AUTHORABLE_TYPES:
            self.summary.skip("edge", _edge_name(edge), f"{edge['type']} edges are made by the server "
                                                         "itself; the API cannot create them")
            continue
        payload = edge_payload(edge)
        for name in payload:
            if name not in ("memory1_id", "memory2_id", "type") and not self.profile.keeps_edge_property(
                    edge["type"], name):
                dropped[f"{edge['type']}.{name}"] = dropped.get(f"{edge['type']}.{name}", 0) + 1
        sendable.append((edge, payload))
    if dropped:
        self.summary.warnings.append(
            "edge properties the server does not keep for their relation type: "
            + ", ".join(f"{name} ({count})" for name, count in sorted(dropped.items())))
    self.phase("edges", len(sendable))
    for part in chunks(sendable, self.batch_size):
        _send_edges(self, part)

def _send_edges(self: Pusher, part: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    response = self.client.request("POST", "/associate",
                                   body={"associations": [payload for _, payload in part]})
    body = response.body if isinstance(response.body, dict) else {}
    succeeded = {item.get("index") for item in body.get("succeeded") or [] if isinstance(item, dict)}
    reasons = {item.get("index"): item.get("reason") for item in body.get("failed") or []
               if isinstance(item, dict)}
    if response.ok and not body.get("succeeded") and not reasons:
        succeeded = set(range(len(part)))  # a server that answers a batch without a per-item report
    done = []
    for index, (edge, _) in enumerate(part):
        if index in succeeded:
            done.append(edge)
            counter = "updated" if edge["known"] else "created"
            setattr(self.summary.edges, counter, getattr(self.summary.edges, counter) + 1)
        elif (gone := _end_gone(self, edge)) is not None:
            self.summary.skip("edge", _edge_name(edge), f"its memory {gone} is gone from the server (deleted there "
                                                        "since; the next pull finds out): not sent")
        else:
            reason = reasons.get(index) or f"POST /associate answered {response.status}: {response.message()}"
            self.summary.fail("edge", _edge_name(edge), str(reason))
    self.map.record_edges(done)
    self.advance(len(part))


def _end_gone(self: Pusher, edge: dict[str, Any]) -> str | None:
    """The local id of an end of ``edge`` the server answers 404 for (None: both are there, or it
    did not say): an edge the server refused because another client deleted that memory."""
    for local_id, remote_id in ((edge["src_id"], edge["src_remote"]), (edge["dst_id"], edge["dst_remote"])):
        if self.client.get(f"/memory/{self.client.quoted(remote_id)}").status == 404:
            return local_id
    return None

def delete_edges(self: Pusher) -> None:
    rows = self.map.edges_deleted()
    gone = [row for row in rows if not row["ends_exist"] or not row["src_remote"] or not row["dst_remote"]]
    self.map.forget_edges(gone)  # the server dropped them with their memory
    rows = [row for row in rows if row not in gone]
    self.phase("removing edges", len(rows))
    done = []
    for row in rows:
        if self._no_edge_delete:
            self.summary.skip("edge", _edge_name(row), "the server has no route to delete an edge")
            done.append(row)
            continue
        response = self.client.request("DELETE", "/associate", query={
            "memory1_id": row["src_remote"], "memory2_id": row["dst_remote"], "type": row["type"]})
        if response.ok or response.status == 404:
            self.summary.edges.deleted += 1
            done.append(row)
        elif response.status == 405:  # AutoMem: POST /associate only
            self._no_edge_delete = True
            self.summary.skip("edge", _edge_name(row), "the server has no route to delete an edge "
                                                       "(DELETE /associate answered 405)")
            done.append(row)  # reported once; the server keeps the edge
        else:
            self.summary.fail("edge", _edge_name(row), f"DELETE /associate answered {response.status}: "
                                                       f"{response.message()}")
        self.advance()
    self.map.forget_edges(done)


def _edge_name(edge: dict[str, Any]) -> str:
    return f"{edge['src_id']} -[{edge['type']}]-> {edge['dst_id']}"
