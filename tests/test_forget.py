"""``localmem forget`` and ``localmem audit`` as a person runs them (subprocesses), and the proof:
the raw bytes of the database file, its -wal and its -shm hold nothing of the forgotten text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localmem import MemoryStore
from localmem.storage.purges import purged_since
from remote_servers import localmem_serve

REPO = Path(__file__).resolve().parent.parent
SECRET = "Zebra-Quokka-9931-Marmalade"
OTHER = "Pelican-Tangerine-4417-Nebula"


def run(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", *args],
                          capture_output=True, text=True, timeout=300, env=env, cwd=REPO)


HOLDER = ("import sys\nfrom localmem import MemoryStore\nstore = MemoryStore(sys.argv[1], embedder='hash')\n"
          "store.health()\nprint('open', flush=True)\nsys.stdin.read()\nstore.close()\n")


def files_of(db: Path) -> dict[str, bytes]:
    return {suffix: Path(f"{db}{suffix}").read_bytes() for suffix in ("", "-wal", "-shm")}


def traces(data: bytes, text: str) -> list[str]:
    """Where ``text`` (as given, lowercased as the full-text index keeps it, or any of its
    distinctive words) is found in ``data``."""
    lowered = data.lower()
    found = [text] if text.lower().encode() in lowered else []
    return found + [w for w in text.lower().split("-") if len(w) > 5 and w.encode() in lowered]


def seeded(db: Path) -> dict[str, str]:
    """Memories holding SECRET in many places: content edited once (an older copy in a freed
    page), a thread neighbour (its FTS row carries its neighbour's text), edge properties, metadata."""
    ids = {}
    with MemoryStore(db, embedder="hash") as store:
        for i in range(200):
            store.store(f"filler memory {i} about tomatoes, sourdough and the garden shed", tags=["filler"])
        ids["secret"] = store.store(f"the vault passphrase is {SECRET}", metadata={"session": "s1"},
                                    timestamp="2026-11-01T10:00:00+00:00")
        store.update(ids["secret"], content=f"the vault passphrase is {SECRET}, keep it safe")
        ids["neighbour"] = store.store("and the next turn says nothing in particular", metadata={"session": "s1"},
                                       timestamp="2026-11-01T10:01:00+00:00")
        ids["noted"] = store.store("a note about the vault", metadata={"hint": f"was {SECRET}"})
        store.associate(ids["secret"], ids["neighbour"], "RELATES_TO", 0.5, reason=f"both mention {SECRET}")
        ids["other"] = store.store(f"the alarm code is {OTHER}")
    return ids


def test_forget_leaves_no_trace_in_the_file_its_wal_or_its_shm(tmp_path):
    db = tmp_path / "m.db"
    ids = seeded(db)
    # A server's connection stays open in another process (so the -wal and -shm stay, as they do in
    # use; in this process, reading the files would drop SQLite's POSIX locks on them).
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert holder.stdout.readline().strip() == "open"
    try:
        deleted = run(db, "delete", ids["other"])  # the control: a plain delete leaves its text behind
        assert deleted.returncode == 0, deleted.stderr
        assert any(traces(data, OTHER) for data in files_of(db).values()), "the test would prove nothing"

        dry = run(db, "--json", "forget", "--matching", SECRET.lower(), "--dry-run")
        assert dry.returncode == 0, dry.stderr
        planned = json.loads(dry.stdout)
        assert planned["dry_run"] and planned["would_forget"] == 2
        assert SECRET not in dry.stdout  # previews are redacted
        assert any(traces(data, SECRET) for data in files_of(db).values())  # nothing changed yet

        done = run(db, "forget", "--matching", SECRET.lower())
        assert done.returncode == 0, done.stderr
        assert "forgot 2 memories" in done.stdout
        files = files_of(db)
        for suffix, data in files.items():
            assert traces(data, SECRET) == [], f"{SECRET} in the database{suffix}"
            assert traces(data, OTHER) == [], f"{OTHER} in the database{suffix} (scrubbed too)"
    finally:
        holder.communicate("", timeout=60)
    with MemoryStore(db, embedder="hash") as store:
        assert {p["id"] for p in purged_since(store.conn, store.sql)} == {ids["secret"], ids["noted"]}
        assert store.get(ids["neighbour"])["content"].startswith("and the next turn")


def test_forget_by_id_and_by_detector_finding_and_bad_input(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        keep = store.store("an ordinary note about the garden")
        plain = store.store("an ordinary note about the kitchen")
        leaked = store.store("deploy with GITHUB_TOKEN=ghp_" + "aB3dE5gH7jK9" * 3)
    out = run(db, "--json", "forget", "--secrets")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ids"] == [leaked] and report["memories"][0]["kinds"] == {"github-token": 1}
    assert run(db, "forget", plain[:8]).returncode == 0
    with MemoryStore(db, embedder="hash") as store:
        assert [m["id"] for m in store.list_memories()["memories"]] == [keep]
    nothing = run(db, "forget")
    assert nothing.returncode == 2 and "--matching" in nothing.stderr
    bad_kind = run(db, "forget", "--secrets", "--kind", "stripe")
    assert bad_kind.returncode == 2 and "unknown kind" in bad_kind.stderr


def test_backups_and_exports_made_before_are_listed(tmp_path):
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store(f"the vault passphrase is {SECRET}")
    assert run(db, "backup", str(tmp_path / "b.db")).returncode == 0
    assert run(db, "export", str(tmp_path / "e.jsonl")).returncode == 0
    done = run(db, "--json", "forget", "--matching", SECRET)
    copies = json.loads(done.stdout)["copies"]
    assert [(c["kind"], Path(c["path"]).name, c["exists"]) for c in copies] == [
        ("backup", "b.db", True), ("export", "e.jsonl", True)]
    human = run(db, "forget", "--matching", "nothing-matches-this", "--dry-run")
    assert "still hold the text" in human.stdout and str(tmp_path / "e.jsonl") in human.stdout


def test_an_export_killed_before_its_rename_is_listed_by_what_it_left(tmp_path):
    """An export killed mid-write (SIGKILL, SIGTERM) leaves its hidden temporary file beside the
    target, holding the text written so far; forget did not know of it."""
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store(f"the vault passphrase is {SECRET}")
    killed = subprocess.run([sys.executable, "-c", (
        "import os, sys; sys.path.insert(0, sys.argv[1]);"
        "from localmem import MemoryStore; import localmem.storage.files as files;"
        "from localmem.maintenance.export import export_file;"
        "files.place = lambda *a, **k: os._exit(9);"  # killed between the write and the rename
        "export_file(MemoryStore(sys.argv[2], embedder='hash'), sys.argv[3])"), str(REPO), str(db),
        str(tmp_path / "out" / "e.jsonl")], capture_output=True, text=True, timeout=60, check=False)
    assert killed.returncode == 9, killed.stderr
    left = [p for p in (tmp_path / "out").iterdir()]
    assert len(left) == 1 and left[0].name.startswith(".e.jsonl.") and SECRET in left[0].read_text()
    copies = json.loads(run(db, "--json", "forget", "--matching", SECRET).stdout)["copies"]
    assert [(c["kind"], c["path"], c["exists"]) for c in copies if c["exists"]] == [
        ("export, unfinished", str(left[0]), True)]


def test_audit_counts_by_source_and_redact_purges_the_credentials(tmp_path):
    db = tmp_path / "m.db"
    stripe = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dcQx"
    with MemoryStore(db, embedder="hash") as store:
        leaked = store.store(f"billing key {stripe}", metadata={"source": "claude-code-hook", "role": "user"})
        store.store("Backups run nightly", tags=["source:cli"])
        store.store("backups run nightly.", tags=["source:cli"])
        store.store("[Request interrupted by user]",  # stored before capture's rules skipped it
                    metadata={"source": "claude-code-hook", "role": "user"})
        store.recall("nightly backups")
    out = run(db, "--json", "audit")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["memories"] == 4 and stripe not in out.stdout
    assert report["credentials"] == {"count": 1, "by_source": {"claude-code-hook": 1},
                                     "kinds": {"stripe-secret-key": 1}}
    assert report["exact_duplicates"]["by_source"] == {"cli": 1}
    assert report["noise"]["by_source"] == {"claude-code-hook": 1}
    assert report["never_recalled"]["count"] < 4
    purged = run(db, "--json", "audit", "--redact")
    assert json.loads(purged.stdout)["redacted"] == 1
    with MemoryStore(db, embedder="hash") as store:
        assert store.get(leaked)["content"] == "billing key [redacted: stripe-secret-key]"
    for suffix, data in files_of_existing(db).items():
        assert stripe.encode() not in data and stripe.lower().encode() not in data.lower(), suffix


def files_of_existing(db: Path) -> dict[str, bytes]:
    return {s: Path(f"{db}{s}").read_bytes() for s in ("", "-wal", "-shm") if Path(f"{db}{s}").exists()}


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    with localmem_serve(tmp_path_factory.mktemp("peer") / "server.db") as server:
        yield server


def test_the_next_push_deletes_the_forgotten_memory_on_the_server(tmp_path, peer):
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        gone = store.store(f"the vault passphrase is {SECRET}", tags=["forget-push"])
        kept = store.store("the vault is in the basement", tags=["forget-push"])
    env = {**os.environ, "PYTHONPATH": str(REPO), "AUTOMEM_API_TOKEN": peer.token}

    def push() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "push", peer.url, "--json"],
                              capture_output=True, text=True, timeout=300, env=env, cwd=REPO)

    assert push().returncode == 0
    on_server = peer.client.get("/memory/by-tag", params={"tags": "forget-push"}).json()["memories"]
    assert len(on_server) == 2
    done = run(db, "forget", gone)
    assert done.returncode == 0 and "the next 'localmem push'" in done.stdout
    pushed = push()
    assert pushed.returncode == 0, pushed.stderr
    assert json.loads(pushed.stdout)["memories"]["deleted"] == 1
    left = peer.client.get("/memory/by-tag", params={"tags": "forget-push"}).json()["memories"]
    assert [m["content"] for m in left] == ["the vault is in the basement"] and kept


def test_a_forget_travels_with_the_next_sync_and_leaves_no_trash_copy(tmp_path):
    """Issue 43 item 3: the purge travels. The peer got the memory by sync; after `forget` here,
    the next `localmem sync` purges the peer's copy (even one it edited since), keeping no trash copy."""
    local, peer = tmp_path / "a.db", tmp_path / "b.db"
    with MemoryStore(local, embedder="hash") as store:
        secret = store.store(f"the vault passphrase is {SECRET}")
        store.store("an ordinary note about the garden")
    MemoryStore(peer, embedder="hash").close()  # sync needs both files
    first = run(local, "sync", str(peer))
    assert first.returncode == 0, first.stderr
    with MemoryStore(peer, embedder="hash") as store:
        assert store.get(secret)["content"].endswith(SECRET)
    done = run(local, "forget", secret)
    assert done.returncode == 0, done.stderr
    synced = run(local, "sync", str(peer))
    assert synced.returncode == 0, synced.stderr
    with MemoryStore(peer, embedder="hash") as store:
        contents = [row[0] for row in store.conn.execute("SELECT content FROM memories")]
        assert contents == ["an ordinary note about the garden"]
        assert store.conn.execute("SELECT count(*) FROM trash").fetchone() == (0,)
        assert store.conn.execute("SELECT purged FROM sync_tombstones WHERE id = ?", (secret,)).fetchone() == (1,)


def test_a_forget_travels_to_a_localmem_serve_peer_with_the_next_sync(tmp_path, peer):
    """The same through a real `localmem serve` peer: the server's copy is purged too."""
    db = tmp_path / "m.db"
    with MemoryStore(db, embedder="hash") as store:
        gone = store.store(f"the alarm code is {OTHER}", tags=["forget-sync"])
        kept = store.store("the alarm panel is by the door", tags=["forget-sync"])
    env = {**os.environ, "PYTHONPATH": str(REPO), "LOCALMEM_API_TOKEN": peer.token}

    def sync() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "sync", peer.url],
                              capture_output=True, text=True, timeout=300, env=env, cwd=REPO)

    first = sync()
    assert first.returncode == 0, first.stderr
    assert peer.client.get(f"/memory/{gone}").status_code == 200
    assert run(db, "forget", gone).returncode == 0
    second = sync()
    assert second.returncode == 0, second.stderr
    assert peer.client.get(f"/memory/{gone}").status_code == 404
    assert peer.client.get(f"/memory/{kept}").status_code == 200
