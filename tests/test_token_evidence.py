"""Token-level evidence: token codes written with every memory the store embeds,
and recall's vector component taken from MaxSim over them (issue 16)."""

from __future__ import annotations

import numpy as np
import pytest

from localmem import Config, MemoryStore
from localmem.embedders import HashEmbedder
from localmem.recall.late_interaction import token_matches, token_score
from localmem.storage.token_codes import (decode, encode, max_sim, measure_centre, query_matrix,
                                          similarities, unit_rows)

from store_helpers import new_store, scalar, snapshot


def codes_of(store: MemoryStore, memory_id: str) -> tuple[int, bytes] | None:
    row = store.conn.execute("SELECT t.tokens, t.codes FROM token_codes AS t JOIN memories AS m "
                             "ON m.pk = t.pk WHERE m.id = ?", (memory_id,)).fetchone()
    return None if row is None else (row[0], row[1])


def component(response: dict, memory_id: str) -> float:
    [hit] = [r for r in response["results"] if r["id"] == memory_id]
    return hit["score_components"]["vector"]


# -- the codes ---------------------------------------------------------------------------------------


def test_codes_are_the_signs_of_each_token_from_the_centre():
    rng = np.random.default_rng(3)
    tokens = rng.normal(size=(7, 70)).astype(np.float32) + 0.5  # a shared direction, as models have
    centre = measure_centre([tokens], 70)
    count, codes = encode(tokens, centre)
    assert count == 7 and len(codes) == 7 * 9  # 70 dimensions in 9 bytes
    signs = decode(count, codes, 70)
    assert np.array_equal(signs, np.where(unit_rows(tokens) - centre > 0, 1.0, -1.0))
    assert decode(count, codes[:-1], 70) is None  # a blob that does not fit is no evidence


def test_similarities_from_the_bits_equal_the_product_with_the_decoded_signs():
    # Recall scores candidates from the bits without decoding them to ±1 (a third of the time).
    rng = np.random.default_rng(5)
    for dims in (70, 384):  # 70: the last byte's padding bits are not dimensions
        tokens = rng.normal(size=(11, dims)).astype(np.float32)
        count, codes = encode(tokens, measure_centre([tokens], dims))
        query = query_matrix(rng.normal(size=(4, dims)).astype(np.float32), np.zeros(dims, np.float32))
        got = similarities(query, count, codes, dims)
        assert got.shape == (4, 11)
        assert np.allclose(got, query @ decode(count, codes, dims).T, atol=1e-5)
        assert similarities(query, count, codes[:-1], dims) is None
        assert similarities(query[:, :-1], count, codes, dims) is None


def test_a_token_matches_itself_fully_and_others_by_their_centred_cosine():
    rng = np.random.default_rng(4)
    memory = rng.normal(size=(30, 384)).astype(np.float32)
    centre = measure_centre([memory], 384)
    signs = decode(*encode(memory, centre), 384)
    query = query_matrix(memory[:5], centre)
    assert max_sim(query, signs) == pytest.approx(1.0)  # every query token is in the memory
    other = query_matrix(rng.normal(size=(5, 384)).astype(np.float32), centre)
    assert max_sim(other, signs) < 0.3


def test_broken_token_vectors_are_dropped_not_coded():
    centre = np.zeros(8, dtype=np.float32)
    tokens = np.array([[np.nan] * 8, [0.0] * 8, [1.0] * 8, [np.inf] + [0.0] * 7], dtype=np.float32)
    assert encode(tokens, centre)[0] == 1  # only the finite, non-zero row
    assert encode(np.ones((3, 5), np.float32), centre) == (0, b"")  # wrong width: nothing
    assert query_matrix(np.ones((2, 5), np.float32), centre).shape[0] == 0


# -- written with the memory ---------------------------------------------------------------------------


def test_every_embedded_memory_gets_codes_one_per_word():
    store = new_store()
    one = store.store("Caroline went to the support group yesterday")
    many = store.store_many([{"content": "Melanie painted a sunrise"}, {"content": "!!!"}])
    assert codes_of(store, one)[0] == 7 and len(codes_of(store, one)[1]) == 7 * 48
    assert codes_of(store, many[0])[0] == 4
    assert codes_of(store, many[1]) is None  # no word, no token: no row
    # One centre, recorded at the first write, for this embedder and dimension.
    assert store.conn.execute("SELECT embedder, dims FROM token_centre").fetchall() == [("hash", 384)]


def test_the_centre_is_fixed_once_recorded(tmp_path):
    path = tmp_path / "memory.db"
    with new_store(path) as store:
        store.store("first memory")
        before = store.conn.execute("SELECT centre FROM token_centre").fetchone()[0]
    with new_store(path) as again:  # another process, and more writes
        again.store_many([{"content": f"memory number {n} about trains"} for n in range(50)])
        assert again.conn.execute("SELECT centre FROM token_centre").fetchall() == [(before,)]


def test_changed_content_replaces_the_codes_and_an_explicit_vector_drops_them():
    store = new_store()
    memory_id = store.store("the cat sat")
    store.update(memory_id, content="a much longer sentence about the cat on the mat")
    assert codes_of(store, memory_id)[0] == 10
    store.update(memory_id, importance=0.9)  # no new text: the codes stay
    assert codes_of(store, memory_id)[0] == 10
    store.update(memory_id, embedding=[1.0] + [0.0] * 383)
    assert codes_of(store, memory_id) is None  # the text's tokens no longer match its vector
    assert scalar(store, "SELECT count(*) FROM token_codes") == 0


def test_deleting_a_memory_deletes_its_codes():
    store = new_store()
    keep, gone = store.store("keep this one"), store.store("delete this one")
    store.delete(gone)
    assert codes_of(store, keep) is not None
    assert scalar(store, "SELECT count(*) FROM token_codes") == 1


def test_a_failed_batch_leaves_no_codes(monkeypatch):
    store = new_store()
    store.store("already here")
    before = snapshot(store)
    with pytest.raises(Exception):
        store.store_many([{"content": "fine"}, {"content": "bad", "importance": "high"}])
    assert snapshot(store) == before


def test_the_lever_off_writes_no_codes():
    store = new_store(config=Config(token_evidence=False))
    store.store("nothing token level here")
    assert scalar(store, "SELECT count(*) FROM token_codes") == 0
    assert scalar(store, "SELECT count(*) FROM token_centre") == 0


class PooledOnly:
    """An embedder with no token vectors (any object with name, dimensions and embed)."""

    name, dimensions = "pooled-only", 384

    def embed(self, texts):
        return HashEmbedder().embed(texts)


def test_an_embedder_without_token_vectors_still_stores_and_recalls():
    store = new_store(embedder=PooledOnly())
    memory_id = store.store("the deploy happens on tuesdays")
    assert codes_of(store, memory_id) is None
    response = store.recall("deploy tuesdays")
    assert response["results"][0]["id"] == memory_id
    assert response["vector_search"]["token_scored"] == 0
    assert component(response, memory_id) > 0.5  # the cosine, as before


# -- read by recall -----------------------------------------------------------------------------------


def test_the_vector_component_is_the_token_score_of_maxsim():
    store = new_store()
    target = store.store("We booked the trip: Lisbon in May, flights on the fourth")
    store.store_many([{"content": f"notes about the garden, week {n}"} for n in range(10)])
    response = store.recall("when is the lisbon trip", limit=11, adaptive_floor=False)
    assert response["vector_search"]["token_scored"] == 11
    # The same MaxSim computed here from the stored codes.
    centre = np.frombuffer(store.conn.execute("SELECT centre FROM token_centre").fetchone()[0], np.float32)
    query_tokens = HashEmbedder().embed_with_tokens(["when is the lisbon trip"])[1][0]
    expected = max_sim(query_matrix(query_tokens, centre), decode(*codes_of(store, target), 384))
    assert component(response, target) == pytest.approx(token_score(expected), abs=1e-6)
    assert response["results"][0]["id"] == target


def test_each_match_keeps_its_best_match_per_query_token():
    store = new_store()
    ids = store.store_many([{"content": "Lisbon in May"}, {"content": "garden notes"}])
    query_tokens = HashEmbedder().embed_with_tokens(["when is the lisbon trip"])[1][0]
    found = token_matches(store._backend, [{"id": i} for i in ids], query_tokens)
    centre = np.frombuffer(store.conn.execute("SELECT centre FROM token_centre").fetchone()[0], np.float32)
    query = query_matrix(query_tokens, centre)
    for memory_id in ids:
        match = found[memory_id]
        assert match.per_token.shape == (query.shape[0],)
        assert float(match.per_token.mean()) == pytest.approx(match.max_sim)
        assert float(match.per_token.max()) == pytest.approx(match.best)


def test_token_evidence_off_uses_the_cosine_again():
    store = new_store()
    target = store.store("We booked the trip: Lisbon in May")
    store.store("notes about the garden")
    on = store.recall("lisbon trip", limit=2, adaptive_floor=False)
    store.config = store.config.with_changes(token_evidence=False)
    off = store.recall("lisbon trip", limit=2, adaptive_floor=False)
    assert off["vector_search"]["token_scored"] == 0 and on["vector_search"]["token_scored"] == 2
    assert component(on, target) != pytest.approx(component(off, target))
    assert component(off, target) == pytest.approx(off["results"][0]["score_components"]["vector"])


def test_a_memory_without_codes_keeps_its_cosine_beside_ones_with_codes():
    store = new_store()
    coded = store.store("the backup runs nightly at two")
    plain = store.store("the backup runs nightly at three", embedding=HashEmbedder().embed(
        ["the backup runs nightly at three"])[0])
    response = store.recall("backup nightly", limit=2, adaptive_floor=False)
    assert response["vector_search"]["token_scored"] == 1
    assert {r["id"] for r in response["results"]} == {coded, plain}
    assert 0.0 < component(response, plain) <= 1.0


def test_an_explicit_query_vector_gets_no_token_evidence():
    store = new_store()
    memory_id = store.store("postgres is the main database")
    response = store.recall("postgres", embedding=HashEmbedder().embed(["postgres"])[0])
    assert response["vector_search"]["token_scored"] == 0
    assert response["results"][0]["id"] == memory_id


def test_a_read_only_file_recalls_with_its_codes(tmp_path):
    path = tmp_path / "memory.db"
    with new_store(path) as store:
        memory_id = store.store("the dentist appointment is on friday")
    with MemoryStore(path, embedder="hash", read_only=True) as reader:
        response = reader.recall("dentist friday")
        assert response["vector_search"]["token_scored"] == 1
        assert response["results"][0]["id"] == memory_id


# -- files from before schema 8 ---------------------------------------------------------------------


def objects_after(version: int) -> list[tuple[str, str]]:
    """The tables, indexes and triggers migrations after ``version`` create, triggers first."""
    import apsw

    from localmem.storage.migrations import migrate
    from localmem.storage.statements import Statements

    def objects(target: int | None) -> set[tuple[str, str]]:
        conn = apsw.Connection(":memory:")
        migrate(conn, Statements(), **({} if target is None else {"target": target}))
        found = set(conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))
        conn.close()
        return found

    order = {"trigger": 0, "index": 1, "table": 2}
    return sorted(objects(None) - objects(version), key=lambda item: order.get(item[0], 3))


def as_schema_7(path) -> None:
    """Turn a file back into what schema 7 wrote: no token tables, no staging columns (and none
    of what later schemas added)."""
    import apsw

    later = objects_after(8)
    conn = apsw.Connection(str(path))
    with conn:
        for kind, name in later:
            if kind in ("trigger", "index", "table"):
                conn.execute(f'DROP {kind.upper()} IF EXISTS "{name}"')
        conn.execute("DROP TABLE token_codes; DROP TABLE token_centre;"
                     "ALTER TABLE reembed_staging DROP COLUMN tokens;"
                     "ALTER TABLE reembed_staging DROP COLUMN codes;"
                     "UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    conn.close()


def test_a_schema_7_file_recalls_by_cosine_until_reembedded(tmp_path):
    from localmem.maintenance.reembed import reembed

    path = tmp_path / "memory.db"
    with new_store(path) as store:
        ids = store.store_many([{"content": f"memory {n} about the river trip"} for n in range(5)])
    as_schema_7(path)
    with new_store(path) as store:
        from localmem.storage.migrations import LATEST_VERSION

        assert scalar(store, "SELECT value FROM meta WHERE key = 'schema_version'") == str(LATEST_VERSION)
        assert scalar(store, "SELECT count(*) FROM token_codes") == 0
        assert store.health()["token_coded_count"] == 0 and store.health()["token_evidence"] is True
        from localmem.cli.maintenance import stats_lines
        from localmem.maintenance.stats import collect_stats

        [line] = [t for t in stats_lines(collect_stats(store, 5), width=1000) if t.startswith("token codes")]
        assert "5 embedded memories have none" in line and "localmem reembed" in line
        before = store.recall("river trip", limit=5)
        assert before["vector_search"]["token_scored"] == 0 and before["count"] == 5
        report = reembed(store)  # same embedder: vectors again, and the token codes
        assert report["status"] == "complete"
        assert store.health()["token_coded_count"] == 5
        assert not [t for t in stats_lines(collect_stats(store, 5)) if t.startswith("token codes")]
        after = store.recall("river trip", limit=5)
        assert after["vector_search"]["token_scored"] == 5
        assert {r["id"] for r in after["results"]} == set(ids)


class GarbageTokens(HashEmbedder):
    """Pooled vectors as the hash embedder's; token vectors broken in every way."""

    def embed_with_tokens(self, texts):
        vectors = self.embed(texts)
        broken = [np.full((3, 384), np.nan, np.float32), np.ones((4, 17), np.float32),
                  np.zeros((2, 384), np.float32), np.full((1, 384), np.inf, np.float32)]
        return vectors, [broken[i % len(broken)] for i in range(len(texts))]


def test_broken_token_vectors_from_an_embedder_store_no_codes_and_recall_still_works():
    store = new_store(embedder=GarbageTokens())
    ids = store.store_many([{"content": f"memory {n} about the harbour"} for n in range(4)])
    assert scalar(store, "SELECT count(*) FROM token_codes") == 0
    response = store.recall("harbour memory")
    assert {r["id"] for r in response["results"]} <= set(ids) and response["count"] > 0
    assert response["vector_search"]["token_scored"] == 0


def test_the_longest_memory_keeps_a_bounded_number_of_token_codes():
    store = new_store()
    memory_id = store.store("a " * 999 + "b")  # 1,000 words in the 2,000 characters allowed
    assert codes_of(store, memory_id)[0] == 512


# -- export and import ------------------------------------------------------------------------------


def test_import_writes_codes_for_what_it_embeds_and_reembed_gives_them_to_all():
    import io
    import json as json_module

    from localmem.maintenance.export import export_jsonl
    from localmem.maintenance.importer import import_jsonl

    source = new_store()
    source.store_many([{"content": f"exported memory {n} about sailing"} for n in range(3)])
    dump = io.StringIO()
    export_jsonl(source, dump)
    lines = dump.getvalue().splitlines()
    hand_written = json_module.dumps({"kind": "memory", "content": "a hand-written line about sailing"})

    target = new_store()
    result = import_jsonl(target, lines[1:] + [hand_written])  # no header: its counts would not match
    # The file's vectors came with no codes, and the answer says so; the line the store
    # embedded itself has them.
    assert target.health()["token_coded_count"] == 1
    assert result.as_dict()["without_token_codes"] == 3
    again = new_store()
    result = import_jsonl(again, lines, reembed=True)  # every memory embedded by this store
    assert again.health()["token_coded_count"] == 3 and result.without_token_codes == 0


def test_doctor_finds_damaged_token_codes_and_repair_drops_them():
    from localmem.maintenance.doctor import check, repair

    store = new_store()
    good, bad = store.store("the harbour opens at six"), store.store("the harbour closes at ten")
    store.conn.execute("UPDATE token_codes SET codes = x'00ff' WHERE pk = (SELECT pk FROM memories "
                       "WHERE id = ?)", (bad,))
    [found] = [c for c in check(store) if c.name == "token_codes_bad"]
    assert found.count == 1 and bad in found.sample[0] and "damaged token codes" in found.message
    response = store.recall("harbour", limit=2, adaptive_floor=False)
    assert response["vector_search"]["token_scored"] == 1 and response["count"] == 2
    assert repair(store)["invalid_token_codes_removed"] == 1
    assert codes_of(store, bad) is None and codes_of(store, good) is not None
    assert [c for c in check(store) if c.name == "token_codes_bad"][0].ok
