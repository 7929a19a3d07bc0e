"""A sync peer behind ``localmem serve``: ``StoreSide``'s methods over its ``/sync/*`` routes."""

from __future__ import annotations

from typing import Any

from ..errors import LocalMemError
from . import sync_wire as wire
from .push_client import PushClient
from .seen import Seen
from .sync_rules import ABSENT, EdgeState, MemoryState
from .sync_side import PAGE


class RemoteSide:
    """The store a ``localmem serve`` serves, as a sync sees it."""

    def __init__(self, client: PushClient, local_id: str) -> None:
        self.client = client
        self.label = client.url
        self.local_id = local_id
        hello = self._call("hello", peer=local_id)
        store_id = hello.get("store_id")
        if not isinstance(store_id, str) or not wire.STORE_ID.fullmatch(store_id):
            raise LocalMemError(f"{client.url} answered /sync/hello without a store id: is it a localmem "
                                "server of this version (AutoMem has no sync routes; use pull/push)?")
        self.store_id = store_id
        self.clock_ms = server_wall_ms(hello, client.url)
        features = hello.get("features")
        self.seen_checked = isinstance(features, list) and wire.SEEN_EXPECT in features

    def seen_window(self) -> str | None:
        """Why a delete made on this server during a sync's join can count as having seen what the sync
        merged (None: the server checks each memory's version inside the join's transaction)."""
        if self.seen_checked:
            return None
        return (f"{self.label} is a server older than this client: its /sync/seen takes no expected version, "
                "so each memory is read just before the join there, and a delete made on the server between "
                "that read and the join counts as having seen what this sync merged (the window is open; "
                "update the server to close it)")

    def settle_pins(self) -> None:
        """Nothing to do from here: the server settles its own at every /sync/hello."""

    def wall_ms(self) -> int | None:
        """The server machine's clock when the sync began (None: a server too old to say)."""
        return self.clock_ms

    def _call(self, route: str, **body: Any) -> dict[str, Any]:
        response = self.client.request("POST", f"/sync/{route}", body=body)
        if response.status == 404:
            raise LocalMemError(f"{self.client.url} has no /sync/{route} route: not a localmem server "
                                "new enough to sync with")
        if not response.ok or not isinstance(response.body, dict):
            raise LocalMemError(f"{self.client.url} /sync/{route}: {response.message()}")
        return response.body

    def clock(self) -> int:
        return _int(self._call("hello", peer=self.local_id).get("clock"))

    def pair_token(self, peer_id: str) -> str | None:
        token = self._call("hello", peer=peer_id).get("pair_token")
        if token is not None and not (isinstance(token, str) and wire.STORE_ID.fullmatch(token)):
            raise LocalMemError(f"{self.client.url} answered /sync/hello with a malformed pair_token")
        return token

    def sent_to(self, peer_id: str) -> int:
        return _int(self._call("hello", peer=peer_id).get("sent_to"))

    def page(self, kind: str, after: int, until: int, peer: str, limit: int | None = None
             ) -> tuple[list[Any], int | None]:
        answer = self._call("page", kind=kind, after=after, until=until, peer=peer,
                            limit=min(limit or PAGE, wire.MAX_ITEMS))
        raw = wire.items(answer.get("items"), "items")
        decode = wire.edge_from_json if kind == "edges" else wire.memory_from_json
        found = [decode(item, f"items[{n}]") for n, item in enumerate(raw)]
        last = answer.get("last")
        if last is not None:
            last = _int(last)
            if last <= after:
                raise LocalMemError(f"{self.client.url} /sync/page went backwards ({last} after {after})")
        return found, last

    def memory_states(self, ids: list[str]) -> dict[str, MemoryState]:
        found: dict[str, MemoryState] = {}
        for start in range(0, len(ids), wire.MAX_ITEMS):
            answer = self._call("states", ids=ids[start:start + wire.MAX_ITEMS])
            for n, item in enumerate(wire.items(answer.get("states"), "states")):
                state = wire.memory_from_json(item, f"states[{n}]")
                found[state.id] = state
        return found

    def edge_states(self, keys: list[tuple[str, str, str]]) -> dict[tuple[str, str, str], EdgeState]:
        found: dict[tuple[str, str, str], EdgeState] = {}
        for start in range(0, len(keys), wire.MAX_ITEMS):
            answer = self._call("edge-states", keys=[list(k) for k in keys[start:start + wire.MAX_ITEMS]])
            for n, item in enumerate(wire.items(answer.get("states"), "states")):
                state = wire.edge_from_json(item, f"states[{n}]")
                found[state.key] = state
        return found

    def memory_edges(self, ids: list[str]) -> list[EdgeState]:
        found: list[EdgeState] = []
        for start in range(0, len(ids), wire.MAX_ITEMS):
            answer = self._call("memory-edges", ids=ids[start:start + wire.MAX_ITEMS])
            found += [wire.edge_from_json(item, f"states[{n}]")
                      for n, item in enumerate(wire.items(answer.get("states"), "states"))]
        return found

    def put_memories(self, states: list[MemoryState], peer: str,
                     expect: dict[str, str] | None = None) -> list[tuple[str, str]]:
        refused: list[tuple[str, str]] = []
        expect = expect or {}
        for start in range(0, len(states), wire.MAX_ITEMS):
            chunk = [{**wire.memory_to_json(s), "expect": expect.get(s.id)}
                     for s in states[start:start + wire.MAX_ITEMS]]
            answer = self._call("put", states=chunk, peer=peer)
            refused += [(str(item[0]), str(item[1])) for item in wire.items(answer.get("refused"), "refused")
                        if isinstance(item, list) and len(item) == 2]
        return refused

    def put_edges(self, states: list[EdgeState], peer: str) -> list[tuple[tuple[str, str, str], str]]:
        refused: list[tuple[tuple[str, str, str], str]] = []
        for start in range(0, len(states), wire.MAX_ITEMS):
            chunk = [wire.edge_to_json(s) for s in states[start:start + wire.MAX_ITEMS]]
            answer = self._call("put-edges", edges=chunk, peer=peer)
            for n, item in enumerate(wire.items(answer.get("refused"), "refused")):
                if isinstance(item, list) and len(item) == 2:
                    refused.append((wire.edge_key(item[0], f"refused[{n}]"), str(item[1])[:500]))
        return refused

    def record_seen(self, seen: dict[str, Seen], expect: dict[str, str] | None = None) -> None:
        """``StoreSide.record_seen`` on the server: the expected versions go with the summaries and are
        checked in the server's join transaction; a server without the feature (``seen_window``) gets
        only the memories still at their version when read again just before."""
        if expect is not None:  # a memory without an expected version joins nowhere (as on a file)
            seen = {i: s for i, s in seen.items() if i in expect}
        if expect is not None and not self.seen_checked:
            held = self.memory_states(list(seen))
            seen = {i: s for i, s in seen.items()
                    if (held[i].version.text() if i in held and held[i].version else ABSENT) == expect.get(i)}
        pairs = [[memory_id, [list(row) for row in summary.rows()]] for memory_id, summary in seen.items()]
        for start in range(0, len(pairs), wire.MAX_ITEMS):
            chunk = pairs[start:start + wire.MAX_ITEMS]
            if expect is not None and self.seen_checked:
                self._call("seen", seen=chunk, expect=[[pair[0], expect[pair[0]]] for pair in chunk])
            else:
                self._call("seen", seen=chunk)

    def record_bases(self, peer_id: str, versions: dict[str, str]) -> None:
        pairs = list(versions.items())
        for start in range(0, len(pairs), wire.MAX_ITEMS):
            self._call("bases", peer=peer_id, versions=[list(p) for p in pairs[start:start + wire.MAX_ITEMS]])

    def record_sent(self, peer_id: str, sent_seq: int, token: str | None = None) -> None:
        self._call("sent", peer=peer_id, sent_seq=sent_seq, token=token)


def server_wall_ms(hello: dict[str, Any], url: str) -> int | None:
    """The server's clock from its /sync/hello answer, in ms since the epoch (None: not given)."""
    value = hello.get("wall_ms")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10 ** 15:
        raise LocalMemError(f"{url} answered /sync/hello with wall_ms {str(value)[:40]!r}: not a clock "
                            "in milliseconds")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2 ** 62:
        raise LocalMemError(f"the server sent {str(value)[:40]!r} where a change number belongs")
    return value
