"""A conflict copy pulled without its link to the memory that won (docs/pull.md, What wins, what
is kept): the link died on the server with the winner (another client deleted it; a push created
it there again under a new id, and the store that made the copy could not send its link again).
The pull links the copy here to the memory its ``metadata.superseded_by`` names, so the two
supersession marks recall reads agree, and the next push sends the link. Against the real
AutoMem, as tests/test_pull.py (whose helpers these use)."""

from __future__ import annotations

from test_pull import counts, create, local_edges, local_memories, pull, push, server  # noqa: F401 (a fixture)

LOST = "Deploys happen on Thursday"
WON = "Deploys happen on Friday"


def copy_metadata(winner: str) -> dict[str, object]:
    """A conflict copy's metadata as another store's push sends it: its marker names that store's
    own id of the winner, ``superseded_by`` the server's."""
    return {"deprecated": True, "superseded_by": winner, "supersede_relation": "INVALIDATED_BY",
            "sync_conflict": {"memory_id": "0b5e3a5c-0000-4000-8000-000000000001",
                              "kept_because": "changed in the same field both here and on the server"}}


def test_a_conflict_copy_pulled_without_its_link_is_linked_to_the_memory_it_names(server, tmp_path):
    db = tmp_path / "local.db"
    winner = create(server, WON, tags=["ops"])
    create(server, LOST, tags=["ops"], metadata=copy_metadata(winner))
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0 and counts(pulled) == {"created": 2}, pulled
    by_content = {m["content"]: m for m in local_memories(db)}
    assert by_content[LOST]["metadata"]["superseded_by"] == by_content[WON]["id"]
    assert (LOST, "INVALIDATED_BY", WON) in local_edges(db)
    assert pulled["edges"]["created"] == 1, pulled  # (AutoMem's own SIMILAR_TO is skipped, as always)
    assert any("conflict cop" in w and "linked" in w for w in pulled["warnings"]), pulled["warnings"]
    code, pushed = push(db, server)  # the link goes to the server
    assert code == 0 and pushed["edges"]["created"] == 1, pushed
    code, pulled = pull(db, server)  # in step: nothing linked again
    assert code == 0 and pulled["edges"]["created"] == 0 and pulled["edges"]["unchanged"] == 1, pulled
    assert not any("conflict cop" in w for w in pulled["warnings"]), pulled["warnings"]


def test_an_ordinary_superseded_memory_gets_no_link_it_did_not_have(server, tmp_path):
    db = tmp_path / "local.db"
    winner = create(server, WON, tags=["ops"])
    create(server, LOST, tags=["ops"], metadata={"superseded_by": winner})
    server.wait_idle()
    code, pulled = pull(db, server)
    assert code == 0 and counts(pulled) == {"created": 2}, pulled
    assert local_edges(db) == set()
