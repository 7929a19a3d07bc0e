"""Issue 33 ("Nothing lost, no one in, round two"), items 1, 2, 3, 4, 8 and 10, replayed for ``attacks.py``.

Each function takes ``attacks.Context`` and returns a ``Tally`` (attempts,
failures, 500s, data lost), like the items in ``attacks.py``:

* ``walks_layered_supersessions`` (1): the cycle check on 20 layers of 3
  memories each superseding the next layer, through ``localmem serve``, while
  another process writes;
* ``walks_deep_related`` (8): ``GET /memories/{id}/related?max_depth=3`` on
  80 densely linked memories, with a recall sent meanwhile;
* ``recall_amplification`` (10): ``GET /recall`` and MCP ``recall_memory``
  with 11-100 queries or more than 10,000 characters of them (must be a 400 /
  tool error naming ``queries``), and the largest accepted recall with a
  second request answered meanwhile;
* ``reembed_races`` (2, 3): two ``localmem reembed`` runs at once, and
  writes from another process across a reembed's swap; every vector must be
  the recorded model's afterwards;
* ``restore_caches`` (4): a long-running process finds memories written after
  a ``localmem restore`` by their own vector.

Every request has a deadline (``DEADLINE`` seconds); an answer after it counts
as a failure, no answer as a failure too.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.attacks.attack_kit import (  # noqa: E402
    McpPipe,
    Server,
    Tally,
    clean_env,
    lost,
    mcp_internal,
    mcp_refused,
    snapshot,
    tool_text,
    tracebacks,
)

DEADLINE = 10.0  # seconds any one request may take
DIMS = 384


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    answer = call()
    return answer, time.monotonic() - start


def answered(t: Tally, response: Any, seconds: float, what: str, expect: int | tuple[int, ...] = 200) -> bool:
    """Count one HTTP attempt: an answer of the expected status within the deadline."""
    expected = (expect,) if isinstance(expect, int) else expect
    if response is None:
        return t.attempt(False, f"{what}: no answer within 30 s")
    error = response.status_code >= 500
    ok = response.status_code in expected and seconds <= DEADLINE
    return t.attempt(ok, f"{what}: {response.status_code} after {seconds:.1f} s: {response.text[:200]}", error=error)


def server_errors(t: Tally, server: Server) -> None:
    log = server.stop()
    if tracebacks(log):
        t.attempt(False, f"the server wrote {tracebacks(log)} tracebacks", error=True)


# -- 1. the supersession cycle check on a layered graph --------------------------------------------------


def layered_store(path: Path, layers: int = 20, width: int = 3) -> list[list[str]]:
    from localmem import MemoryStore

    with MemoryStore(path, embedder="hash") as store:
        ids = [store.store_many([{"content": f"layer {i} memory {j} of the plan"} for j in range(width)])
               for i in range(layers)]
        for older, newer in zip(ids, ids[1:]):
            for a in older:
                for b in newer:
                    store.associate(a, b, type="INVALIDATED_BY")
    return ids


WRITER = """
import sys, time
from localmem import MemoryStore
store = MemoryStore(sys.argv[1], embedder=sys.argv[3] if len(sys.argv) > 3 else "hash")
deadline, slowest, count = time.monotonic() + float(sys.argv[2]), 0.0, 0
while time.monotonic() < deadline:
    start = time.monotonic()
    store.store(f"written by another process {count}")
    slowest, count = max(slowest, time.monotonic() - start), count + 1
print(count, slowest)
"""


def walks_layered_supersessions(ctx: Any) -> Tally:
    t = Tally("33.1 supersession cycle check on 20 layers x 3 (171 edges)",
              "`POST /associate` INVALIDATED_BY / EVOLVED_INTO onto the first layer (the check walks "
              "3^20 paths when it enumerates them) and across the layers (a real cycle: the answer must "
              "warn), through `localmem serve`, while another process writes; each within 10 s")
    folder = ctx.dir("r2-layers")
    db = folder / "layers.db"
    layers = layered_store(db)
    before = snapshot(db)
    server = Server(db, clean_env(), folder / "serve.log")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), "8"], env=clean_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for n in range(12):
            if ctx.out_of_time(t):
                break
            new = server.request("POST", "/memory", json={"content": f"newcomer {n} replacing the plan"})
            if new is None or new.status_code != 201:
                answered(t, new, 0.0, "store a newcomer", 201)
                continue
            newcomer = new.json()["memory_id"]
            relation = ctx.rng.choice(["INVALIDATED_BY", "EVOLVED_INTO"])
            target = ctx.rng.choice(layers[0])
            response, seconds = timed(lambda: server.request("POST", "/associate", json={
                "memory1_id": newcomer, "memory2_id": target, "type": relation, "strength": 0.9}))
            if answered(t, response, seconds, f"associate a newcomer {relation} onto the first layer", 201):
                t.attempt(not response.json().get("warnings"), f"a warning without a cycle: {response.text[:200]}")
            # From a later layer back to an earlier one: a cycle the answer must name.
            late, early = ctx.rng.randrange(10, 20), ctx.rng.randrange(0, 5)
            response, seconds = timed(lambda: server.request("POST", "/associate", json={
                "memory1_id": ctx.rng.choice(layers[late]), "memory2_id": ctx.rng.choice(layers[early]),
                "type": relation, "strength": 0.9}))
            if answered(t, response, seconds, "associate closing a cycle", 201):
                warned = any("closes a supersession cycle" in w for w in response.json().get("warnings", []))
                t.attempt(warned, f"a cycle not reported: {response.text[:300]}")
    finally:
        out, err = writer.communicate(timeout=60)
        server_errors(t, server)
    if writer.returncode != 0:
        t.attempt(False, f"the other process's writes failed: {err[-300:]}", error="Traceback" in err)
    else:
        count, slowest = out.split()
        t.attempt(float(slowest) <= DEADLINE, f"another process's write waited {float(slowest):.1f} s "
                                              f"({count} writes)")
    t.lose(lost(before, snapshot(db)), "memories or edges of the layered graph changed")
    return t


# -- 8. deep related walks ------------------------------------------------------------------------------


def dense_store(path: Path, size: int = 80) -> list[str]:
    from localmem import MemoryStore

    with MemoryStore(path, embedder="hash") as store:
        ids = store.store_many([{"content": f"densely linked memory {i} about the orchard"} for i in range(size)])
        with store.lock:
            for i in range(size):
                for j in range(i + 1, size):
                    store.associate(ids[i], ids[j], type="RELATES_TO")
    return ids


def walks_deep_related(ctx: Any) -> Tally:
    t = Tally("33.8 related at depth 3 on 80 densely linked memories",
              "`GET /memories/{id}/related?max_depth=3` (all 79 others within one hop; the path walk "
              "enumerated ~80^3 paths per start), with a `GET /recall` sent meanwhile; each within 10 s")
    folder = ctx.dir("r2-dense")
    db = folder / "dense.db"
    ids = dense_store(db)
    before = snapshot(db)
    server = Server(db, clean_env(), folder / "serve.log")
    try:
        for n in range(10):
            if ctx.out_of_time(t):
                break
            centre = ctx.rng.choice(ids)
            side: dict[str, Any] = {}

            def recall_meanwhile() -> None:
                side["answer"], side["seconds"] = timed(lambda: server.request(
                    "GET", "/recall", params={"query": "orchard memory", "limit": 3}))

            thread = threading.Thread(target=recall_meanwhile)
            thread.start()
            response, seconds = timed(lambda: server.request("GET", f"/memories/{centre}/related", params={
                "max_depth": 3, "limit": 200, "relationship_types": "RELATES_TO"}))
            thread.join(60)
            if answered(t, response, seconds, "related at depth 3"):
                body = response.json()
                found = {m["id"] for m in body["related_memories"]}
                t.attempt(found == set(ids) - {centre} and not body.get("truncated"),
                          f"related found {len(found)} of {len(ids) - 1}")
            answered(t, side.get("answer"), side.get("seconds", 0.0), "a recall sent meanwhile")
    finally:
        server_errors(t, server)
    t.lose(lost(before, snapshot(db)), "the dense graph changed")
    return t


# -- 10. amplification ----------------------------------------------------------------------------------


def recall_amplification(ctx: Any) -> Tally:
    t = Tally("33.10 recall amplification (queries x length)",
              "`GET /recall` with 11-100 `queries` (up to 11 KiB) or more than 10,000 characters of them, "
              "and MCP `recall_memory` with 100 queries of 10,000 characters: a 400 / tool error naming "
              "`queries` within 10 s; the largest accepted recall (10 queries, 10,000 characters) answered "
              "within 10 s with a second request answered meanwhile")
    from localmem import MemoryStore

    folder = ctx.dir("r2-amplification")
    db = folder / "amp.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store_many([{"content": f"memory {i} about apples pears and the walled garden"} for i in range(2000)])
    before = snapshot(db)
    server = Server(db, clean_env(), folder / "serve.log")
    try:
        for n in range(20):
            if ctx.out_of_time(t):
                break
            count = ctx.rng.randrange(11, 101)
            params = [("queries", f"which apples and pears grew best in the old walled garden {i:03d}")
                      for i in range(count)]
            response, seconds = timed(lambda: server.request("GET", "/recall", params=params))
            if answered(t, response, seconds, f"{count} queries", 400):
                t.attempt("'queries'" in response.json().get("message", ""), f"400 not naming queries: "
                                                                             f"{response.text[:200]}")
            long_text = [("queries", "garden " * 1000), ("queries", "orchard " * 600)]
            response, seconds = timed(lambda: server.request("GET", "/recall", params=long_text))
            answered(t, response, seconds, "two queries of 12,800 characters in all", (400, 414, 431))
        heaviest = [("queries", ("apples pears garden " * 60)[:1000]) for _ in range(10)]
        side: dict[str, Any] = {}

        def second() -> None:
            time.sleep(0.05)
            side["answer"], side["seconds"] = timed(lambda: server.request("GET", "/memory/by-tag",
                                                                           params={"tags": "none"}))

        thread = threading.Thread(target=second)
        thread.start()
        response, seconds = timed(lambda: server.request("GET", "/recall", params=heaviest))
        thread.join(60)
        answered(t, response, seconds, "the largest accepted recall")
        answered(t, side.get("answer"), side.get("seconds", 0.0), "a request sent while it ran")
    finally:
        server_errors(t, server)
    pipe = McpPipe(db, folder / "mcp.log")
    try:
        for arguments in ({"queries": ["x" * 10_000] * 100}, {"queries": ["y" * 6_000, "z" * 6_000]},
                          {"queries": [f"apples {i}" for i in range(11)]}):
            reply, seconds = timed(lambda: pipe.call("recall_memory", arguments, timeout=30))
            t.attempt(mcp_refused(reply) and "'queries'" in tool_text(reply) and seconds <= DEADLINE,
                      f"MCP recall_memory with {len(arguments['queries'])} queries: {tool_text(reply)[:200]} "
                      f"after {seconds:.1f} s", error=mcp_internal(reply))
    finally:
        log = pipe.close()
        if tracebacks(log):
            t.attempt(False, f"localmem mcp wrote {tracebacks(log)} tracebacks", error=True)
    t.lose(lost(before, snapshot(db), ignore_embeddings=frozenset()), "the store changed")
    return t


# -- 2, 3. reembed races -----------------------------------------------------------------------------------


def vector_check(db: Path) -> tuple[str, int, int, int]:
    """(recorded embedder, dimensions, memories, vectors that are not that embedder's for their content)."""
    import apsw

    from localmem.embedders import resolve_embedder, spec_for_recorded_name

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'dimensions')"))
        rows = list(conn.execute("SELECT m.content, e.embedding FROM memories m "
                                 "LEFT JOIN memory_embeddings e ON e.pk = m.pk"))
    finally:
        conn.close()
    from array import array

    embedder = resolve_embedder(spec_for_recorded_name(meta["embedder"]))
    expected = embedder.embed([content for content, _ in rows])
    wrong = sum(1 for (_, blob), vector in zip(rows, expected)
                if blob is None or blob != array("f", vector).tobytes())
    return meta["embedder"], int(meta["dimensions"]), len(rows), wrong


def reembed_races(ctx: Any) -> Tally:
    t = Tally("33.2/33.3 reembed races",
              "two `localmem reembed --embedder hash:N` runs started together (one must be refused while the "
              "other owns the file), and a writer process storing memories across a reembed's swap; "
              "afterwards every vector must be the recorded embedder's for its content")
    from localmem import MemoryStore

    folder = ctx.dir("r2-reembed")
    db = folder / "reembed.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store_many([{"content": f"memory {i} about the deploy pipeline and the orchard"} for i in range(3000)])
    before = snapshot(db)
    contents = set(json.loads(r)["content"] for r in before["memories"].values())
    env = clean_env()
    refused = 0
    for n, (first, second) in enumerate([(128, 256), (64, 384), (256, 128)]):
        if ctx.out_of_time(t):
            break
        runs = [subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(db), "--json", "reembed",
                                  "--embedder", f"hash:{dims}", "--batch-size", "50"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for dims in (first, second)]
        outcomes = [run.communicate(timeout=300) + (run.returncode,) for run in runs]
        refused += sum(code == 1 for _, _, code in outcomes)
        for out, err, code in outcomes:
            t.attempt(code in (0, 1) and (code == 0 or "another reembed" in err),
                      f"reembed exit {code}: {err[-300:]}", error="Traceback" in err or code not in (0, 1))
        name, dims, count, wrong = vector_check(db)
        t.attempt(wrong == 0, f"{wrong} of {count} vectors not {name}'s after two reembeds at once")
    name, _, _, _ = vector_check(db)
    spec = name.replace("hash-", "hash:")  # the writer opens the file with the embedder it records
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(db), "8", spec], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for dims in (384, 192, 384):
        done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--json", "reembed",
                               "--embedder", f"hash:{dims}", "--batch-size", "50"], env=env,
                              capture_output=True, text=True, timeout=300)
        t.attempt(done.returncode == 0, f"reembed under a writer: {done.stderr[-300:]}",
                  error="Traceback" in done.stderr)
    out, err = writer.communicate(timeout=60)
    t.attempt(writer.returncode == 0, f"the writer failed: {err[-300:]}", error="Traceback" in err)
    name, dims, count, wrong = vector_check(db)
    t.attempt(wrong == 0, f"{wrong} of {count} vectors not {name}'s after writes across swaps")
    t.tried += f" ({refused} of 6 runs started together were refused)"
    after = snapshot(db)
    # Vectors change by design (reembed); content and every other column must stay.
    t.lose(lost(before, after, ignore_embeddings=frozenset(before["memories"])), "memories changed")
    t.attempt(contents <= set(json.loads(r)["content"] for r in after["memories"].values()),
              "memories missing after the reembeds")
    return t


# -- 4. caches after a restore ---------------------------------------------------------------------------


def restore_caches(ctx: Any) -> Tally:
    t = Tally("33.4 caches after restore",
              "a long-running process (a server's store) keeps its vector codes while `localmem restore` "
              "takes the file back and another process writes more than was undone; it must find every "
              "new memory by its own vector, as a fresh process does")
    import numpy as np

    from localmem import MemoryStore

    rng = np.random.default_rng(ctx.rng.randrange(1 << 30))

    def vectors(n: int) -> Any:
        v = rng.standard_normal((n, DIMS)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def put(store: MemoryStore, label: str, values: Any) -> list[str]:
        return store.store_many([{"content": f"{label} {i}", "embedding": v.tolist()} for i, v in enumerate(values)])

    for n in range(3):
        if ctx.out_of_time(t):
            break
        folder = ctx.dir(f"r2-restore-{n}")
        db = folder / "memory.db"
        process = MemoryStore(db, embedder="hash")
        try:
            put(process, "before the backup", vectors(1000))
            made = ctx.cli.run("--db", "memory.db", "backup", "memory.bak", cwd=folder, kind="r2 backup")
            t.attempt(made.code == 0, f"backup: {made.stderr[-200:]}", error=made.crashed)
            put(process, "after the backup", vectors(100 + 50 * n))
            process.recall(embedding=vectors(1)[0].tolist(), limit=1)
            done = ctx.cli.run("--db", "memory.db", "restore", "memory.bak", cwd=folder, kind="r2 restore")
            t.attempt(done.code == 0, f"restore: {done.stderr[-200:]}", error=done.crashed)
            later = vectors(200 + 50 * n)
            with MemoryStore(db, embedder="hash") as other:
                new = put(other, "written after the restore", later)
            found = sum(process.recall(embedding=v.tolist(), limit=1)["results"][0]["id"] == memory_id
                        for memory_id, v in zip(new, later))
            t.attempt(found == len(new), f"the long-running process found {found} of {len(new)} new memories "
                                         "by their own vector")
        finally:
            process.close()
    return t


ITEMS: list[tuple[str, Callable[[Any], Tally]]] = [
    ("33.1", walks_layered_supersessions), ("33.8", walks_deep_related), ("33.10", recall_amplification),
    ("33.2", reembed_races), ("33.4", restore_caches),
]
