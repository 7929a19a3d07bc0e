"""``localmem forget`` reaches what replication keeps (issue 43's gaps): memories in the trash
(a sync or pull deleted them: ``--matching``, ``--secrets`` and ids find them there too), and the
field hashes a pull kept of a memory (``pull_seen``). The CLI runs as a subprocess; the raw
bytes of the files are read afterwards."""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from pathlib import Path

import apsw
import pytest

from localmem import MemoryStore
from localmem.maintenance.export import dump_line, iter_export
from localmem.maintenance.forget import forget, select_targets
from localmem.maintenance.importer import ImportLineError, import_jsonl
from localmem.replication.sync import sync_stores
from localmem.replication.sync_side import StoreSide
from localmem.trash import move_to_trash, trash_entries
from test_forget import OTHER, SECRET, run, traces
from test_pull import Hostile, local_memories
from test_pull import run as run_remote

TOKEN = "ghp_" + "aB3dE5gH7jK9" * 3


def files_of_existing(db: Path) -> dict[str, bytes]:
    return {suffix: Path(f"{db}{suffix}").read_bytes() for suffix in ("", "-wal", "-shm")
            if Path(f"{db}{suffix}").exists()}


def test_forget_finds_memories_in_the_trash_and_leaves_no_trace_of_them(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        for i in range(50):
            store.store(f"filler memory {i} about tomatoes and the garden shed")
        by_text = store.store(f"the vault passphrase is {SECRET}", metadata={"hint": "vault"})
        by_detector = store.store(f"deploy with GITHUB_TOKEN={TOKEN}")
        by_id = store.store(f"the alarm code is {OTHER}")
        kept = store.store("the wifi is called Garden-5G")
        for memory_id in (by_text, by_detector, by_id):  # as a sync or a pull deletes: into the trash
            assert move_to_trash(store, memory_id, "pull from http://automem.example")
    assert any(traces(data, SECRET) for data in files_of_existing(db).values()), "the test would prove nothing"

    dry = run(db, "--json", "forget", "--matching", SECRET.lower(), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert planned["would_forget"] == 1 and planned["memories"][0]["id"] == by_text
    assert planned["memories"][0]["reason"] == "matching (in the trash)" and SECRET not in dry.stdout

    assert "forgot 1 memory" in run(db, "forget", "--matching", SECRET.lower()).stdout
    secrets = run(db, "--json", "forget", "--secrets")
    assert secrets.returncode == 0, secrets.stderr
    report = json.loads(secrets.stdout)
    assert report["forgotten"] == 1 and report["memories"][0]["id"] == by_detector
    assert report["memories"][0]["kinds"] == {"github-token": 1}
    with MemoryStore(db, embedder="hash") as store:
        [target] = select_targets(store, ids=[by_id])  # an id that is only in the trash
        assert forget(store, [target["id"]])["forgotten"] == 1
        assert trash_entries(store) == []
        assert [m["id"] for m in store.list_memories(limit=100)["memories"] if "wifi" in m["content"]] == [kept]
    for suffix, data in files_of_existing(db).items():
        for text in (SECRET, OTHER, TOKEN):
            assert traces(data, text) == [], f"{text} in the database{suffix}"


def test_forget_drops_what_a_pull_kept_of_the_memory_and_the_next_pull_does_not_bring_it_back(tmp_path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    nodes = [{"id": "remote-secret", "content": f"the vault passphrase is {SECRET}"},
             {"id": "remote-plain", "content": "the standup is at ten"}]
    httpd.listing = json.dumps({"nodes": nodes, "stats": {"total_nodes": 2}})  # type: ignore[attr-defined]
    httpd.alive = {"remote-secret", "remote-plain"}  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    db = tmp_path / "local.db"
    try:
        assert run_remote(db, "pull", url, "t")[1]["memories"]["created"] == 2
        done = run(db, "forget", "--matching", SECRET.lower())
        assert done.returncode == 0 and "forgot 1 memory" in done.stdout, done.stderr
        conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            seen = [row[0] for row in conn.execute("SELECT remote_id FROM pull_seen")]
            pushed = dict(conn.execute("SELECT remote_id, fields FROM push_ids"))
        finally:
            conn.close()
        assert seen == ["remote-plain"]  # no hash of the forgotten memory's fields is left
        assert pushed["remote-secret"] == "{}" and pushed["remote-plain"] != "{}"
        code, again = run_remote(db, "pull", url, "t")  # the server still has it: not pulled back
        assert code == 0 and again["memories"]["created"] == 0, again
        assert [m["content"] for m in local_memories(db)] == ["the standup is at ten"]
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_older_export_imported_on_a_peer_the_forget_reached_by_sync_brings_nothing_back(tmp_path):
    """A memory forgotten on one store and purged on its peer by the next sync is refused by
    the peer's import of an export taken before (naming its id), as on the store that forgot it;
    the rest of the file imports once its line is removed."""
    with MemoryStore(tmp_path / "a.db", embedder="hash") as here, \
            MemoryStore(tmp_path / "b.db", embedder="hash") as peer:
        secret = here.store(f"the vault passphrase is {SECRET}")
        here.store("the wifi is called Garden-5G")
        sync_stores(StoreSide(here, "a"), StoreSide(peer, "b"))
        older = [dump_line(value) for value in iter_export(peer)]
        assert forget(here, [secret])["forgotten"] == 1
        assert sync_stores(StoreSide(here, "a"), StoreSide(peer, "b")).deleted_on_peer == 1
        with pytest.raises(ImportLineError, match=f"memory {secret} was forgotten"):
            import_jsonl(peer, older, skip_existing=True)
        assert peer.conn.execute("SELECT count(*) FROM memories WHERE id = ?", (secret,)).fetchone() == (0,)
        rest = [line for line in older if secret not in line]
        rest[0] = rest[0].replace('"memories":2', '"memories":1')  # the header counts the lines
        assert import_jsonl(peer, rest, skip_existing=True).as_dict()["skipped"] == 1
        assert [row[0] for row in peer.conn.execute("SELECT content FROM memories")] == ["the wifi is called Garden-5G"]


def test_forgetting_a_memory_only_in_the_trash_purges_the_peers_trash_copy_at_the_next_sync(tmp_path):
    """A memory a delete on A removed is in B's and C's trash (a sync put it there). `forget` of it on
    B, where it is only in the trash, marks B's deletion purged; the next sync must carry the mark
    to C, which then drops its trash copy, full text and all. The mark did not travel: it changed
    the deletion without giving it a new change number, so a sync reading changes since the last
    one never saw it, and C kept the text for 30 days."""
    a, b, c = (MemoryStore(tmp_path / f"{name}.db", embedder="hash") for name in "abc")
    try:
        secret = a.store(f"the vault passphrase is {SECRET}")
        a.store("the wifi is called Garden-5G")
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        sync_stores(StoreSide(b, "b"), StoreSide(c, "c"))
        a.delete(secret)
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        sync_stores(StoreSide(b, "b"), StoreSide(c, "c"))
        assert [e["id"] for e in trash_entries(c)] == [secret]
        assert forget(b, [secret])["forgotten"] == 1
        sync_stores(StoreSide(b, "b"), StoreSide(c, "c"))
        assert trash_entries(c) == []
        assert c.conn.execute("SELECT purged FROM sync_tombstones WHERE id = ?", (secret,)).fetchone() == (1,)
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))  # and on to A, whose own delete kept no trash copy
        assert a.conn.execute("SELECT purged FROM sync_tombstones WHERE id = ?", (secret,)).fetchone() == (1,)
    finally:
        for store in (a, b, c):
            store.close()


def test_forget_on_the_store_that_deleted_a_memory_purges_the_peers_trash_copy(tmp_path):
    """`localmem delete` on A keeps no trash copy there, but the next sync puts the memory, full text and
    all, in B's trash. `forget ID` on A said "Memory not found"; it now marks A's deletion purged, and the
    next sync drops B's copy."""
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        secret = a.store(f"the vault passphrase is {SECRET}")
        a.store("the wifi is called Garden-5G")
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        a.delete(secret)
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        assert [e["id"] for e in trash_entries(b)] == [secret]
    done = run(tmp_path / "a.db", "forget", secret)
    assert done.returncode == 0, done.stderr
    assert "deleted here; the next syncs drop the peers' copies" in done.stdout and "forgot 1 memory" in done.stdout
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        assert trash_entries(b) == []
        assert b.conn.execute("SELECT purged FROM sync_tombstones WHERE id = ?", (secret,)).fetchone() == (1,)
    unknown = run(tmp_path / "a.db", "forget", "00000000-0000-4000-8000-000000000000")
    assert unknown.returncode != 0 and "not found" in unknown.stderr.lower()  # an id never seen is still refused


def test_forgetting_several_ids_forgets_each_ones_conflict_copies_held_or_in_the_trash(tmp_path):
    """One scan finds the conflict copies of every id named (not one scan of the store per id); each copy
    is named for its own memory, whether it is held or in the trash."""
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memories = [a.store(f"note {n} about the garden shed") for n in range(3)]
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        for n, memory in enumerate(memories):
            a.update(memory, content=f"note {n} says the shed key is under the pot")
            b.update(memory, content=f"note {n} says the shed key is with the neighbour")
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        copies = {json.loads(m)["sync_conflict"]["memory_id"]: i for i, m in a.conn.execute(
            "SELECT id, metadata FROM memories WHERE metadata LIKE '%sync_conflict%'")}
        assert sorted(copies) == sorted(memories), copies
        move_to_trash(a, copies[memories[1]], "a user's delete")  # one copy in the trash, the others held
        named = [memories[2], memories[0]]
        found = {t["id"]: t["reason"] for t in select_targets(a, ids=named)}
        assert found == {memories[2]: "id", memories[0]: "id",
                         copies[memories[2]]: f"conflict copy of {memories[2][:8]}",
                         copies[memories[0]]: f"conflict copy of {memories[0][:8]}"}, found
        found = {t["id"]: t["reason"] for t in select_targets(a, ids=[memories[1]])}
        assert found == {memories[1]: "id", copies[memories[1]]: f"conflict copy of {memories[1][:8]} (in the trash)"}


def test_forgetting_a_memory_forgets_its_conflict_copies_here_and_on_the_peer(tmp_path):
    """A memory changed on both stores keeps its losing version as a conflict copy (a memory of its own,
    with its own id). `forget ID` forgot the memory and left the copy, with the text of the earlier version,
    to be shown by recall; every version now goes, here and, by the next sync, on the peer."""
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        memory = a.store("the vault passphrase is in the blue notebook")
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        a.update(memory, content=f"the vault passphrase is {SECRET}")
        b.update(memory, content=f"the vault passphrase is {OTHER}")
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        texts = [row[0] for row in a.conn.execute("SELECT content FROM memories")]
        assert len(texts) == 2 and any(SECRET in t for t in texts) and any(OTHER in t for t in texts), texts
    done = run(tmp_path / "a.db", "--json", "forget", memory)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["forgotten"] == 2, report
    assert [m["reason"] for m in report["memories"]] == ["id", f"conflict copy of {memory[:8]}"]
    with MemoryStore(tmp_path / "a.db", embedder="hash") as a, MemoryStore(tmp_path / "b.db", embedder="hash") as b:
        sync_stores(StoreSide(a, "a"), StoreSide(b, "b"))
        for store in (a, b):
            assert store.conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
            assert trash_entries(store) == []
    for secret in (SECRET, OTHER):  # scrubbed here; a peer purges without a scrub (docs/sync.md, Purge)
        assert not any(traces(data, secret) for data in files_of_existing(tmp_path / "a.db").values()), secret
