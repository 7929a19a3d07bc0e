"""Shared machinery of the reliability scripts and their short test versions.

* ``run_concurrency``: writer and reader processes plus an HTTP server (and
  HTTP clients) on one file for a bounded time, then a check that every
  acknowledged write is present and intact, nothing is duplicated, the indexes
  agree and the file is sound. Figures: operations, errors ("database is
  locked" counted apart), write-lock waits and hold times, reader latencies,
  the largest WAL file seen.
* ``run_crash``: a bulk import (``localmem import``) killed with SIGKILL at
  random moments, then a check of the file after each kill.

Used by ``benchmarks/safety/stress_concurrency.py``, ``benchmarks/safety/crash_import.py``
and ``tests/test_reliability.py``. Stdlib, localmem and httpx only.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

WORDS = ("redis cache postgres index deploy rollback kafka queue latency budget timeout retry "
         "schema migration backup restore token auth session cookie docker image release "
         "meeting alice bob carol python rust golang memory vector search keyword ranking").split()
TOPICS = ("infra", "db", "team", "release", "security", "search")
SHARED_FIELDS = ("importance", "tags", "metadata", "relevance_score")
TOKEN = "stress-test-token-0123456789"


# -- measuring the write lock -----------------------------------------------------------------


class Timings:
    """Durations in seconds, summarised without keeping every sample forever."""

    def __init__(self) -> None:
        self.samples: list[float] = []

    def add(self, seconds: float) -> None:
        self.samples.append(seconds)

    def summary(self) -> dict[str, Any]:
        values = sorted(self.samples)
        if not values:
            return {"count": 0, "max_ms": 0.0, "p50_ms": 0.0, "p99_ms": 0.0, "mean_ms": 0.0}

        def pct(q: float) -> float:
            return round(values[min(len(values) - 1, int(q * len(values)))] * 1000, 2)

        return {"count": len(values), "max_ms": round(values[-1] * 1000, 2), "p50_ms": pct(0.5),
                "p99_ms": pct(0.99), "mean_ms": round(statistics.fmean(values) * 1000, 3)}


class TimedConnection:
    """Stands in for ``store.conn``: times ``BEGIN IMMEDIATE`` (the wait for the write lock)
    and how long the lock is then held (until COMMIT or ROLLBACK)."""

    def __init__(self, conn: Any) -> None:
        from localmem.storage.database import WalCheckpointer

        self._conn = conn
        self.lock_wait = Timings()
        self.lock_hold = Timings()
        self.checkpoints = Timings()
        self.begin_failures = 0
        self._acquired: float | None = None
        self._hook_time = 0.0
        checkpointer = self.checkpointer = WalCheckpointer(conn.execute("PRAGMA page_size").fetchone()[0])

        def timed_hook(connection: Any, name: str, pages: int) -> int:
            # The WAL hook runs inside COMMIT but after the write lock is released:
            # its time is reported apart, not as lock hold time.
            start = time.perf_counter()
            attempts = checkpointer.checkpoints
            try:
                return checkpointer(connection, name, pages)
            finally:
                spent = time.perf_counter() - start
                self._hook_time += spent
                if checkpointer.checkpoints != attempts:
                    self.checkpoints.add(spent)

        conn.set_wal_hook(timed_hook)

    def execute(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        if sql == "BEGIN IMMEDIATE":
            start = time.perf_counter()
            try:
                result = self._conn.execute(sql, *args, **kwargs)
            except Exception:
                self.begin_failures += 1
                raise
            finally:
                self.lock_wait.add(time.perf_counter() - start)
            self._acquired = time.perf_counter()
            return result
        if sql in ("COMMIT", "ROLLBACK") and self._acquired is not None:
            self._hook_time = 0.0
            try:
                return self._conn.execute(sql, *args, **kwargs)
            finally:
                self.lock_hold.add(time.perf_counter() - self._acquired - self._hook_time)
                self._acquired = None
        return self._conn.execute(sql, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def __enter__(self) -> Any:
        return self._conn.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        return self._conn.__exit__(*exc)


def is_lock_error(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".lower()
    return "locked" in text or "busy" in text


# -- workers ----------------------------------------------------------------------------------


def _open(path: str) -> tuple[Any, TimedConnection]:
    from localmem import MemoryStore

    store = MemoryStore(path, embedder="hash")
    timed = TimedConnection(store.conn)
    store.conn = timed
    return store, timed


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _record_error(errors: dict[str, Any], exc: BaseException) -> None:
    key = "locked" if is_lock_error(exc) else "other"
    errors[key] += 1
    if len(errors["samples"]) < 5:
        errors["samples"].append(f"{type(exc).__name__}: {exc}"[:300])


def writer_process(index: int, path: str, deadline: float, out: str, shared: list[str], seed: int) -> None:
    """Stores, batches, updates (own memories and its own field of the shared ones),
    associations and deletes; logs every acknowledged write."""
    rng = random.Random(seed)
    store, timed = _open(path)
    acks: list[Any] = []
    errors: dict[str, Any] = {"locked": 0, "other": 0, "samples": []}
    ops: dict[str, int] = {}
    own: list[str] = []
    revisions: dict[str, int] = {}
    seq = 0
    field = SHARED_FIELDS[index % len(SHARED_FIELDS)]
    op_time = Timings()
    while time.time() < deadline:
        seq += 1
        roll = rng.random()
        start = time.perf_counter()
        try:
            if roll < 0.50 or len(own) < 4:
                kind = "store"
                content = f"writer {index} seq {seq}: {_words(rng, 8)}"
                tags = [f"writer:{index}", f"topic:{rng.choice(TOPICS)}"]
                meta = {"writer": index, "seq": seq}
                memory_id = store.store(content, tags=tags, metadata=meta)
                acks.append(["store", memory_id, content, tags, meta])
                own.append(memory_id)
            elif roll < 0.60:
                kind = "batch"
                items = []
                for j in range(rng.randint(2, 20)):
                    items.append({"content": f"writer {index} seq {seq}.{j}: {_words(rng, 6)}",
                                  "tags": [f"writer:{index}", "batch"],
                                  "metadata": {"writer": index, "seq": seq, "item": j}})
                ids = store.store_many(items)
                for memory_id, item in zip(ids, items):
                    acks.append(["store", memory_id, item["content"], item["tags"], item["metadata"]])
                own.extend(ids)
            elif roll < 0.75:
                kind = "update_shared"
                target = rng.choice(shared)
                if field == "importance":
                    value: Any = round(rng.random(), 6)
                elif field == "tags":
                    value = ["shared", f"v{index}-{seq}"]
                elif field == "metadata":
                    value = {"writer": index, "seq": seq}
                else:
                    value = round(rng.random(), 6)
                store.update(target, **{field: value})
                acks.append(["shared", target, field, value])
            elif roll < 0.85:
                kind = "update_own"
                target = rng.choice(own)
                revisions[target] = revisions.get(target, 0) + 1
                meta = {"writer": index, "rev": revisions[target]}
                store.update(target, metadata=meta)
                acks.append(["update", target, meta])
            elif roll < 0.93:
                kind = "associate"
                first, second = rng.sample(own, 2)
                relation = rng.choice(["RELATES_TO", "LEADS_TO", "PART_OF"])
                store.associate(first, second, relation, strength=0.7)
                acks.append(["edge", first, second, relation])
            else:
                kind = "delete"
                target = own.pop(rng.randrange(len(own)))
                store.delete(target)
                acks.append(["delete", target])
            ops[kind] = ops.get(kind, 0) + 1
        except Exception as exc:
            _record_error(errors, exc)
        op_time.add(time.perf_counter() - start)
    store.close()
    Path(out).write_text(json.dumps({
        "role": "writer", "index": index, "ops": ops, "errors": errors, "acks": acks,
        "lock_wait": timed.lock_wait.summary(), "lock_hold": timed.lock_hold.summary(),
        "checkpoints": timed.checkpoints.summary(), "truncations": timed.checkpointer.truncations,
        "begin_failures": timed.begin_failures, "op_time": op_time.summary(),
    }))


def reader_process(index: int, path: str, deadline: float, out: str, seed: int) -> None:
    """Recalls (some with tags or relation expansion), by-tag pages, gets, related, health."""
    rng = random.Random(seed)
    store, timed = _open(path)
    errors: dict[str, Any] = {"locked": 0, "other": 0, "samples": []}
    ops: dict[str, int] = {}
    recall_time, other_time = Timings(), Timings()
    seen: list[str] = []
    drift = 0
    while time.time() < deadline:
        roll = rng.random()
        start = time.perf_counter()
        try:
            if roll < 0.6:
                kind = "recall"
                params: dict[str, Any] = {"limit": rng.randint(3, 15)}
                if rng.random() < 0.25:
                    params["tags"] = [f"topic:{rng.choice(TOPICS)}"]
                if rng.random() < 0.2:
                    params["expand_relations"] = True
                response = store.recall(_words(rng, rng.randint(1, 4)), **params)
                seen = [r["id"] for r in response["results"]][:20] or seen
                recall_time.add(time.perf_counter() - start)
            elif roll < 0.75:
                kind = "by_tag"
                store.by_tag([f"writer:{rng.randrange(4)}"], limit=20, offset=rng.randrange(50))
                other_time.add(time.perf_counter() - start)
            elif roll < 0.9 and seen:
                kind = "get"
                memory_id = rng.choice(seen)
                try:
                    store.get(memory_id)
                    store.related(memory_id)
                except Exception as exc:  # a memory deleted since it was recalled is fine
                    if type(exc).__name__ != "NotFoundError":
                        raise
                other_time.add(time.perf_counter() - start)
            else:
                kind = "health"
                if not store.health()["indexes_agree"]:
                    drift += 1
                other_time.add(time.perf_counter() - start)
            ops[kind] = ops.get(kind, 0) + 1
        except Exception as exc:
            _record_error(errors, exc)
    store.close()
    Path(out).write_text(json.dumps({
        "role": "reader", "index": index, "ops": ops, "errors": errors, "drift_seen": drift,
        "lock_wait": timed.lock_wait.summary(), "lock_hold": timed.lock_hold.summary(),
        "checkpoints": timed.checkpoints.summary(), "truncations": timed.checkpointer.truncations,
        "begin_failures": timed.begin_failures, "recall_time": recall_time.summary(),
        "other_time": other_time.summary(),
    }))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(path: str) -> tuple[subprocess.Popen[bytes], str]:
    """``localmem serve`` on a free loopback port, token-protected; waits for /health."""
    import httpx

    port = _free_port()
    env = {**os.environ, "LOCALMEM_API_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "localmem", "--db", path, "--embedder", "hash", "serve",
         "--port", str(port), "--log-level", "warning"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("server did not start")


def http_client(index: int, url: str, deadline: float, result: dict[str, Any], seed: int) -> None:
    """Stores (single and batch), recalls, gets and patches through the HTTP API."""
    import httpx

    rng = random.Random(seed)
    acks: list[Any] = []
    statuses: dict[str, int] = {}
    errors: dict[str, Any] = {"locked": 0, "other": 0, "samples": []}
    latency = Timings()
    own: list[str] = []
    revisions: dict[str, int] = {}
    seq = 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as client:
        while time.time() < deadline:
            seq += 1
            roll = rng.random()
            start = time.perf_counter()
            try:
                if roll < 0.35 or len(own) < 2:
                    content = f"http {index} seq {seq}: {_words(rng, 8)}"
                    body = {"content": content, "tags": [f"http:{index}"], "metadata": {"http": index, "seq": seq}}
                    response = client.post("/memory", json=body)
                    if response.status_code == 201:
                        memory_id = response.json()["memory_id"]
                        acks.append(["store", memory_id, content, body["tags"], body["metadata"]])
                        own.append(memory_id)
                elif roll < 0.45:
                    items = [{"content": f"http {index} seq {seq}.{j}: {_words(rng, 5)}",
                              "tags": [f"http:{index}"], "metadata": {"http": index, "seq": seq, "item": j}}
                             for j in range(rng.randint(2, 10))]
                    response = client.post("/memory/batch", json={"memories": items})
                    if response.status_code == 201:
                        for memory_id, item in zip(response.json()["memory_ids"], items):
                            acks.append(["store", memory_id, item["content"], item["tags"], item["metadata"]])
                            own.append(memory_id)
                elif roll < 0.75:
                    response = client.get("/recall", params={"query": _words(rng, 3), "limit": 10})
                elif roll < 0.88:
                    response = client.get(f"/memory/{rng.choice(own)}")
                else:
                    target = rng.choice(own)
                    revisions[target] = revisions.get(target, 0) + 1
                    meta = {"http": index, "rev": revisions[target]}
                    response = client.patch(f"/memory/{target}", json={"metadata": meta})
                    if response.status_code == 200:
                        acks.append(["update", target, meta])
                key = str(response.status_code)
                statuses[key] = statuses.get(key, 0) + 1
                if response.status_code >= 500:
                    text = response.text
                    errors["locked" if "lock" in text.lower() or "busy" in text.lower() else "other"] += 1
                    if len(errors["samples"]) < 5:
                        errors["samples"].append(f"{response.status_code}: {text[:300]}")
            except Exception as exc:
                _record_error(errors, exc)
            latency.add(time.perf_counter() - start)
    result.update({"role": "http", "index": index, "statuses": statuses, "errors": errors,
                   "acks": acks, "latency": latency.summary()})


# -- lock strategies compared ------------------------------------------------------------------------

LOCK_MODES = {
    "old: deferred `with conn:` + SQLite busy timeout": ("deferred", "builtin"),
    "`BEGIN IMMEDIATE` + SQLite busy timeout": ("immediate", "builtin"),
    "`BEGIN IMMEDIATE` + `LockWait` (current)": ("immediate", "lockwait"),
}


def store_loop_process(mode: str, waits: str, path: str, deadline: float, out: str, index: int) -> None:
    """``store()`` in a loop under one lock strategy (the old one is rebuilt by patching)."""
    from localmem.storage import database
    from localmem import store as store_module

    store, _ = _open(path)
    conn = store.conn._conn
    store.conn = conn
    if mode == "deferred":
        conn.transaction_mode = "DEFERRED"
        store_module.transaction = lambda c, **_: c  # a bare `with conn:`, as before the fix
    if waits == "builtin":
        conn.set_busy_timeout(database.BUSY_TIMEOUT_MS)
    rng = random.Random(index)
    stored = locked = other = 0
    latency = Timings()
    seq = 0
    while time.time() < deadline:
        seq += 1
        start = time.perf_counter()
        try:
            store.store(f"lock test {index} {seq} {_words(rng, 6)}", tags=["lock"])
            stored += 1
        except Exception as exc:
            if is_lock_error(exc):
                locked += 1
            else:
                other += 1
        latency.add(time.perf_counter() - start)
    store.close()
    Path(out).write_text(json.dumps({"stored": stored, "locked": locked, "other": other,
                                     "latency": latency.summary()}))


def run_lock_comparison(seconds: float, processes: int = 4, rounds: int = 3,
                        workdir: str | None = None) -> list[dict[str, Any]]:
    """Each strategy ``rounds`` times, interleaved (the machine is shared and noisy)."""
    context = multiprocessing.get_context("spawn")
    folder = Path(workdir or tempfile.mkdtemp(prefix="localmem-locks-"))
    per_mode: dict[str, list[dict[str, Any]]] = {label: [] for label in LOCK_MODES}
    for round_no in range(rounds):
        for label, (mode, waits) in LOCK_MODES.items():
            name = f"{mode}-{waits}-{round_no}"
            path = str(folder / f"{name}.db")
            seed_store(path, 50, 0)
            deadline = time.time() + seconds
            outs = [str(folder / f"{name}-{i}.json") for i in range(processes)]
            procs = [context.Process(target=store_loop_process, args=(mode, waits, path, deadline, outs[i], i))
                     for i in range(processes)]
            for proc in procs:
                proc.start()
            for proc in procs:
                proc.join(seconds + 60)
            results = [json.loads(Path(o).read_text()) for o in outs]
            per_mode[label].append({"stored": sum(r["stored"] for r in results),
                                    "locked": sum(r["locked"] for r in results),
                                    "other": sum(r["other"] for r in results),
                                    "max_ms": max(r["latency"]["max_ms"] for r in results),
                                    "p99_ms": max(r["latency"]["p99_ms"] for r in results)})
    rows = []
    for label, runs in per_mode.items():
        rows.append({"strategy": label, "processes": processes, "seconds": seconds, "rounds": rounds,
                     "stored": sum(r["stored"] for r in runs), "locked_errors": sum(r["locked"] for r in runs),
                     "other_errors": sum(r["other"] for r in runs),
                     "max_ms": max(r["max_ms"] for r in runs),
                     "p99_ms": statistics.median(r["p99_ms"] for r in runs),
                     "per_round": runs})
    return rows


# -- the concurrency run -------------------------------------------------------------------------


class FileWatcher(threading.Thread):
    """Polls the WAL and database sizes; keeps the maxima."""

    def __init__(self, path: str, interval: float = 0.02) -> None:
        super().__init__(daemon=True)
        self.path, self.interval = path, interval
        self.max_wal = 0
        self.max_db = 0
        self.samples = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for suffix in ("-wal", ""):
                try:
                    size = os.path.getsize(self.path + suffix)
                except OSError:
                    continue
                if suffix:
                    self.max_wal = max(self.max_wal, size)
                else:
                    self.max_db = max(self.max_db, size)
            self.samples += 1
            self.stop.wait(self.interval)


def seed_store(path: str, n: int, shared: int) -> list[str]:
    from localmem import MemoryStore

    rng = random.Random(7)
    with MemoryStore(path, embedder="hash") as store:
        store.store_many([{"content": f"seed {i}: {_words(rng, 10)}", "tags": [f"topic:{rng.choice(TOPICS)}"],
                           "metadata": {"seed": i}} for i in range(n)])
        return store.store_many([{"content": f"shared counter {i}", "tags": ["shared"]} for i in range(shared)])


def verify(path: str, acks: list[Any], seeded: int) -> dict[str, Any]:
    """Every acknowledged write present and intact; nothing duplicated; indexes and file sound."""
    from localmem import MemoryStore
    from localmem.maintenance import doctor

    expected: dict[str, dict[str, Any]] = {}
    deleted: set[str] = set()
    shared_last: dict[tuple[str, str], Any] = {}
    edges: set[tuple[str, str, str]] = set()
    for ack in acks:
        kind = ack[0]
        if kind == "store":
            expected[ack[1]] = {"content": ack[2], "tags": ack[3], "metadata": ack[4]}
        elif kind == "update":
            expected[ack[1]]["metadata"] = ack[2]
        elif kind == "shared":
            shared_last[(ack[1], ack[2])] = ack[3]
        elif kind == "edge":
            edges.add((ack[1], ack[2], ack[3]))
        elif kind == "delete":
            deleted.add(ack[1])
    report: dict[str, Any] = {"acknowledged_stores": len(expected), "acknowledged_deletes": len(deleted),
                              "acknowledged_shared_updates": sum(1 for a in acks if a[0] == "shared"),
                              "acknowledged_updates": sum(1 for a in acks if a[0] == "update"),
                              "acknowledged_edges": len(edges)}
    with MemoryStore(path, embedder="hash") as store:
        rows = {r[0]: (r[1], json.loads(r[2]), json.loads(r[3])) for r in store.conn.execute(
            "SELECT id, content, tags, metadata FROM memories")}
        contents = [r[0] for r in rows.values()]
        report["memories_in_file"] = len(rows)
        report["duplicated_contents"] = len(contents) - len(set(contents))
        missing = [i for i in expected if i not in deleted and i not in rows]
        altered = [i for i, want in expected.items() if i not in deleted and i in rows
                   and rows[i] != (want["content"], want["tags"], want["metadata"])]
        resurrected = [i for i in deleted if i in rows]
        lost_shared = []
        for (memory_id, field), value in shared_last.items():
            record = store.get(memory_id)
            if record[field] != value:
                lost_shared.append((memory_id, field, value, record[field]))
        edge_rows = {(r[0], r[1], r[2]) for r in store.conn.execute(
            "SELECT s.id, d.id, e.type FROM edges e JOIN memories s ON s.pk = e.src JOIN memories d ON d.pk = e.dst")}
        missing_edges = [e for e in edges if e[0] not in deleted and e[1] not in deleted and e not in edge_rows]
        live_expected = seeded + len(expected) - len(deleted)
        checks = doctor.check(store)
        problems = [c.as_dict() for c in doctor.problems(checks)]
        integrity = [r[0] for r in store.conn.execute("PRAGMA integrity_check")]
        recall_ok = store.recall("redis cache", limit=5)["status"] == "success"
    report.update({
        "missing": len(missing), "altered": len(altered), "resurrected_deletes": len(resurrected),
        "lost_shared_updates": len(lost_shared), "missing_edges": len(missing_edges),
        "unacknowledged_extra": len(rows) - live_expected,
        "doctor_problems": problems, "integrity": integrity, "recall_after": recall_ok,
        "samples": {"missing": missing[:3], "altered": altered[:3], "lost_shared": lost_shared[:3]},
    })
    report["data_lost"] = (len(missing) + len(altered) + len(resurrected) + len(lost_shared)
                           + len(missing_edges) + report["duplicated_contents"])
    return report


def run_concurrency(duration: float, *, writers: int = 4, readers: int = 4, http_clients: int = 2,
                    seed_memories: int = 300, workdir: str | None = None, log: Any = print) -> dict[str, Any]:
    """The whole run; returns the figures (see the module docstring)."""
    context = multiprocessing.get_context("spawn")
    folder = Path(workdir or tempfile.mkdtemp(prefix="localmem-stress-"))
    path = str(folder / "stress.db")
    shared = seed_store(path, seed_memories, 8)
    seeded = seed_memories + len(shared)
    server, url = start_server(path)
    watcher = FileWatcher(path)
    watcher.start()
    log(f"file {path}; server {url}; {writers} writers, {readers} readers, {http_clients} HTTP clients, "
        f"{duration:.0f} s")
    started = time.time()
    deadline = started + duration
    outputs = []
    processes = []
    for i in range(writers):
        out = str(folder / f"writer-{i}.json")
        outputs.append(out)
        processes.append(context.Process(target=writer_process, args=(i, path, deadline, out, shared, 100 + i)))
    for i in range(readers):
        out = str(folder / f"reader-{i}.json")
        outputs.append(out)
        processes.append(context.Process(target=reader_process, args=(i, path, deadline, out, 200 + i)))
    for process in processes:
        process.start()
    http_results: list[dict[str, Any]] = [{} for _ in range(http_clients)]
    threads = [threading.Thread(target=http_client, args=(i, url, deadline, http_results[i], 300 + i))
               for i in range(http_clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for process in processes:
        process.join(duration + 120)
        if process.is_alive():
            process.kill()
    elapsed = time.time() - started
    server.send_signal(signal.SIGINT)
    try:
        server.wait(30)
    except subprocess.TimeoutExpired:
        server.kill()
    server_log = server.stderr.read().decode(errors="replace") if server.stderr else ""
    watcher.stop.set()
    watcher.join()
    results = []
    for out in outputs:
        try:
            results.append(json.loads(Path(out).read_text()))
        except (OSError, ValueError):
            results.append({"role": "crashed", "out": out})
    results.extend(http_results)
    acks = [a for r in results for a in r.get("acks", [])]
    checked = verify(path, acks, seeded)
    writers_r = [r for r in results if r.get("role") == "writer"]
    readers_r = [r for r in results if r.get("role") == "reader"]
    http_r = [r for r in results if r.get("role") == "http"]

    def total(items: list[dict[str, Any]], key: str) -> int:
        return sum(sum(r.get(key, {}).values()) if isinstance(r.get(key), dict) else 0 for r in items)

    def worst(items: list[dict[str, Any]], key: str, stat: str = "max_ms") -> float:
        return max((r[key][stat] for r in items if key in r), default=0.0)

    figures = {
        "duration_s": round(elapsed, 1),
        "processes": {"writers": writers, "readers": readers, "http_clients": http_clients},
        "writer_ops": total(writers_r, "ops"),
        "reader_ops": total(readers_r, "ops"),
        "http_requests": total(http_r, "statuses"),
        "http_statuses": {k: sum(r.get("statuses", {}).get(k, 0) for r in http_r)
                          for k in sorted({k for r in http_r for k in r.get("statuses", {})})},
        "ops_by_kind": {k: sum(r.get("ops", {}).get(k, 0) for r in writers_r + readers_r)
                        for k in sorted({k for r in writers_r + readers_r for k in r.get("ops", {})})},
        "locked_errors": sum(r.get("errors", {}).get("locked", 0) for r in results),
        "other_errors": sum(r.get("errors", {}).get("other", 0) for r in results),
        "error_samples": [s for r in results for s in r.get("errors", {}).get("samples", [])][:10],
        "crashed_workers": sum(1 for r in results if r.get("role") == "crashed"),
        "health_drift_seen": sum(r.get("drift_seen", 0) for r in readers_r),
        "writer_lock_wait": {"max_ms": worst(writers_r, "lock_wait"), "p99_ms": worst(writers_r, "lock_wait", "p99_ms")},
        "writer_lock_hold": {"max_ms": worst(writers_r, "lock_hold"), "p99_ms": worst(writers_r, "lock_hold", "p99_ms")},
        "reader_touch_lock_wait": {"max_ms": worst(readers_r, "lock_wait"),
                                   "p99_ms": worst(readers_r, "lock_wait", "p99_ms")},
        "reader_touch_lock_hold": {"max_ms": worst(readers_r, "lock_hold"),
                                   "p99_ms": worst(readers_r, "lock_hold", "p99_ms")},
        "touch_skipped": sum(r.get("begin_failures", 0) for r in readers_r),
        "checkpoints_run": sum(r.get("checkpoints", {}).get("count", 0) for r in writers_r + readers_r),
        "wal_truncations": sum(r.get("truncations", 0) for r in writers_r + readers_r),
        "checkpoint_time": {"max_ms": worst(writers_r + readers_r, "checkpoints"),
                            "p99_ms": worst(writers_r + readers_r, "checkpoints", "p99_ms")},
        "writer_begin_failures": sum(r.get("begin_failures", 0) for r in writers_r),
        "recall_latency": {"max_ms": worst(readers_r, "recall_time"),
                           "p99_ms": worst(readers_r, "recall_time", "p99_ms"),
                           "p50_ms": worst(readers_r, "recall_time", "p50_ms")},
        "writer_op_latency": {"max_ms": worst(writers_r, "op_time"), "p99_ms": worst(writers_r, "op_time", "p99_ms")},
        "http_latency": {"max_ms": worst(http_r, "latency"), "p99_ms": worst(http_r, "latency", "p99_ms")},
        "max_wal_bytes": watcher.max_wal,
        "max_db_bytes": watcher.max_db,
        "final_wal_bytes": os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0,
        "wal_samples": watcher.samples,
        "server_stderr_tail": server_log[-1500:],
        "verify": checked,
        "path": path,
    }
    return figures


# -- crash safety ------------------------------------------------------------------------------------


def make_import_file(path: Path, n: int, dims: int = 384, seed: int = 11) -> list[str]:
    """A JSONL import file of ``n`` memories with vectors and tags, every 10th with an edge."""
    rng = random.Random(seed)
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(n)]
    with open(path, "w", encoding="utf-8") as fp:
        for i, memory_id in enumerate(ids):
            vector = [rng.uniform(-1, 1) for _ in range(dims)]
            fp.write(json.dumps({"kind": "memory", "id": memory_id,
                                 "content": f"import {i}: {_words(rng, 12)}",
                                 "tags": [f"topic:{rng.choice(TOPICS)}", f"import:{i % 7}"],
                                 "metadata": {"i": i}, "type": "Context",
                                 "timestamp": "2024-01-01T00:00:00+00:00",
                                 "embedding": vector}) + "\n")
        for i in range(10, n, 10):
            fp.write(json.dumps({"kind": "edge", "memory1_id": ids[i - 10], "memory2_id": ids[i],
                                 "relation_type": "RELATES_TO", "strength": 0.5}) + "\n")
    return ids


IMPORT_CHILD = r"""
import sys, json
sys.path.insert(0, sys.argv[4])
from localmem import MemoryStore
from localmem.maintenance.importer import Importer
path, source, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = MemoryStore(path, embedder="hash:384")
importer = Importer(store, chunk_size=batch, skip_existing=True, chunked=True)  # one transaction per batch
original = importer.flush_memories
def flush_and_ack():
    chunk = [p.item.get("id") for p in importer._pending]
    original()
    # acknowledged: the transaction committed and store_many returned
    print(json.dumps(chunk), flush=True)
importer.flush_memories = flush_and_ack
print("READY", flush=True)
with open(source, encoding="utf-8") as fp:
    for lineno, line in enumerate(fp, 1):
        importer.feed(lineno, line)
importer.finish()
print("DONE", flush=True)
"""


def run_crash(kills: int, *, memories: int = 3000, batch: int = 100, seed: int = 5,
              workdir: str | None = None, log: Any = print) -> dict[str, Any]:
    """Kill an import with SIGKILL at ``kills`` random moments; check the file after each kill.

    The importer runs with ``skip_existing`` so each restart resumes where the
    previous one stopped. A batch counts as acknowledged once the child prints
    its ids, after ``store_many`` returned (the transaction committed).
    """
    from localmem import MemoryStore
    from localmem.maintenance import doctor

    rng = random.Random(seed)
    folder = Path(workdir or tempfile.mkdtemp(prefix="localmem-crash-"))
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "import.jsonl"
    all_ids = make_import_file(source, memories)
    path = str(folder / "crash.db")
    MemoryStore(path, embedder="hash:384").close()
    acknowledged: set[str] = set()
    rounds = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Calibrate: how long a whole import takes, to spread the kills over it.
    probe_start = time.perf_counter()
    probe = subprocess.run([sys.executable, "-c", IMPORT_CHILD, str(folder / "probe.db"), str(source), str(batch),
                            str(ROOT)], env=env, capture_output=True, text=True, timeout=600)
    full_time = time.perf_counter() - probe_start
    if "DONE" not in probe.stdout:
        raise RuntimeError(f"calibration import failed: {probe.stderr[-2000:]}")
    for name in ("probe.db", "probe.db-wal", "probe.db-shm"):
        if (folder / name).exists():
            (folder / name).unlink()
    chunk_time = full_time / max(1, memories // batch)
    for round_no in range(kills):
        before = _count(path)
        present_before = _ids(path)
        remaining_chunks = max(1, (memories - before) // batch)
        # Kill after the child acknowledged a random number of new chunks, at a random
        # moment within the next chunk's write (or, sometimes, before any write at all).
        wait_for = rng.randint(0, max(0, min(remaining_chunks - 2, 8)))
        delay = rng.uniform(0, chunk_time * 1.5)
        child = subprocess.Popen([sys.executable, "-c", IMPORT_CHILD, path, str(source), str(batch), str(ROOT)],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        new_chunks = skipped_chunks = 0
        ready = False
        assert child.stdout is not None
        # Past start-up and the chunks already in the file (skipped), then `wait_for` new ones.
        while not ready or skipped_chunks < before // batch or new_chunks < wait_for:
            line = child.stdout.readline()
            if not line:
                break
            lines.append(line.strip())
            if line.strip() == "READY":
                ready = True
            elif line.startswith("["):
                if set(json.loads(line)) <= present_before:
                    skipped_chunks += 1
                else:
                    new_chunks += 1
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        out, _err = child.communicate()
        lines.extend(out.splitlines())
        acked_now = 0
        finished = False
        for line in lines:
            if line == "DONE":
                finished = True
            elif line.startswith("["):
                batch_ids = set(json.loads(line))
                acked_now += len(batch_ids - acknowledged)
                acknowledged.update(batch_ids)
        with MemoryStore(path, embedder="hash:384") as store:
            present = {r[0] for r in store.conn.execute("SELECT id FROM memories")}
            problems = [c.name for c in doctor.problems(doctor.check(store))]
            recall_ok = store.recall("redis cache deploy", limit=3)["status"] == "success"
        missing_acked = len(acknowledged - present)
        # A batch is all-or-nothing: the new rows must be whole import chunks.
        new_rows = len(present) - before
        partial = (new_rows % batch != 0) and len(present) != memories
        rounds.append({"round": round_no + 1, "chunks_waited": wait_for, "kill_delay_s": round(delay, 3),
                       "finished_before_kill": finished,
                       "memories_before": before, "memories_after": len(present),
                       "acknowledged_in_round": acked_now,
                       # committed, but killed before it could say so: allowed, not a loss
                       "committed_unacknowledged": len(present - acknowledged),
                       "missing_acknowledged": missing_acked,
                       "partial_batch": partial, "doctor_problems": problems, "recall_ok": recall_ok,
                       "killed_by_signal": child.returncode == -signal.SIGKILL})
        log(f"  kill {round_no + 1}/{kills} ({wait_for} new chunks + {delay * 1000:.0f} ms): "
            f"{before} -> {len(present)} memories, {acked_now} newly acknowledged, "
            f"missing {missing_acked}, doctor {problems or 'clean'}")
        if len(present) >= memories:  # complete: start over with a fresh file
            for name in ("", "-wal", "-shm"):
                if os.path.exists(path + name):
                    os.unlink(path + name)
            MemoryStore(path, embedder="hash:384").close()
            acknowledged.clear()
    integrity = _integrity(path)
    return {"kills": kills, "memories_per_import": memories, "batch": batch,
            "full_import_s": round(full_time, 2), "rounds": rounds,
            "kills_mid_import": sum(1 for r in rounds if not r["finished_before_kill"]),
            "rounds_with_committed_unacknowledged_chunk": sum(1 for r in rounds if r["committed_unacknowledged"]),
            "acknowledged_total": sum(r["acknowledged_in_round"] for r in rounds),
            "missing_acknowledged": sum(r["missing_acknowledged"] for r in rounds),
            "partial_batches": sum(1 for r in rounds if r["partial_batch"]),
            "doctor_problems": sum(len(r["doctor_problems"]) for r in rounds),
            "recall_failures": sum(1 for r in rounds if not r["recall_ok"]),
            "final_integrity": integrity, "ids_in_file": len(all_ids)}


def run_cli_crash(kills: int, *, memories: int = 3000, batch: int = 100, seed: int = 9,
                  workdir: str | None = None, log: Any = print) -> dict[str, Any]:
    """The real ``localmem import`` command killed with SIGKILL at random moments.

    It prints nothing per batch, so "acknowledged" is what an earlier check
    saw in the file: the count must never go down, always be whole batches,
    and ``doctor`` must stay clean.
    """
    from localmem import MemoryStore
    from localmem.maintenance import doctor

    rng = random.Random(seed)
    folder = Path(workdir or tempfile.mkdtemp(prefix="localmem-cli-crash-"))
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "import.jsonl"
    make_import_file(source, memories, seed=seed)
    path = str(folder / "cli.db")
    MemoryStore(path, embedder="hash:384").close()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "localmem", "--db", path, "--embedder", "hash:384", "import", str(source),
               "--batch-size", str(batch), "--skip-existing", "--chunked"]
    start = time.perf_counter()
    probe = subprocess.run(command[:4] + [str(folder / "probe.db")] + command[5:], env=env, capture_output=True,
                           text=True, timeout=600)
    full_time = time.perf_counter() - start
    if probe.returncode != 0:
        raise RuntimeError(f"calibration import failed: {probe.stderr[-2000:]}")
    rounds = []
    for round_no in range(kills):
        before = _count(path)
        delay = rng.uniform(0.3 * full_time, full_time)  # the first ~0.3 is interpreter start-up
        child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        child.send_signal(signal.SIGKILL)
        child.wait()
        with MemoryStore(path, embedder="hash:384") as store:
            after = store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            problems = [c.name for c in doctor.problems(doctor.check(store))]
            recall_ok = store.recall("redis cache deploy", limit=3)["status"] == "success"
        rounds.append({"round": round_no + 1, "kill_after_s": round(delay, 2), "before": before, "after": after,
                       "went_down": after < before, "partial_batch": after % batch != 0 and after != memories,
                       "doctor_problems": problems, "recall_ok": recall_ok})
        log(f"  CLI kill {round_no + 1}/{kills} after {delay:.2f} s: {before} -> {after} memories, "
            f"doctor {problems or 'clean'}")
        if after >= memories:
            for name in ("", "-wal", "-shm"):
                if os.path.exists(path + name):
                    os.unlink(path + name)
            MemoryStore(path, embedder="hash:384").close()
    return {"kills": kills, "full_import_s": round(full_time, 2), "rounds": rounds,
            "went_down": sum(r["went_down"] for r in rounds),
            "partial_batches": sum(r["partial_batch"] for r in rounds),
            "doctor_problems": sum(len(r["doctor_problems"]) for r in rounds),
            "recall_failures": sum(not r["recall_ok"] for r in rounds),
            "final_integrity": _integrity(path)}


def _ids(path: str) -> set[str]:
    import apsw

    conn = apsw.Connection(path)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM memories")}
    finally:
        conn.close()


def _count(path: str) -> int:
    import apsw

    conn = apsw.Connection(path)
    try:
        return conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        conn.close()


def _integrity(path: str) -> list[str]:
    import apsw

    conn = apsw.Connection(path)
    try:
        return [r[0] for r in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


def format_exception() -> str:
    return traceback.format_exc()


# -- docs/results/history.md -------------------------------------------------------------------------

RESULTS = ROOT / "docs" / "results" / "history.md"
SECTION_START, SECTION_END = "<!-- reliability:start -->", "<!-- reliability:end -->"
PARTS = ("concurrency", "crash", "hostile", "faults", "attacks")
INTRO = """## Reliability and security (issue 8)

Five bounded scripts, each rewriting only its own part of this section (between
`<!-- reliability/NAME:start -->` and `<!-- reliability/NAME:end -->`); short versions of
the same runs are in the test suite (`tests/test_reliability.py`, `tests/test_hostile_input.py`,
`tests/test_resource_faults.py`, `tests/test_security.py`, and issue 12's regression tests).
The last part, `benchmarks/attacks/attacks.py`, replays the attacks of issue 12 against the real
interfaces.

How localmem keeps many processes safe on one file (`localmem/database.py`):

- **WAL**, `synchronous=NORMAL`: readers never wait for writers. A process crash (kill -9) loses
  nothing that was committed; a power cut may lose the last commits since the previous checkpoint,
  never the file's consistency (SQLite's WAL guarantee at `NORMAL`).
- **`BEGIN IMMEDIATE` for every write** (`database.transaction()`, and the connection's
  `transaction_mode`): a writer takes the write lock before it reads, so it queues on the busy
  handler. apsw's `with conn:` used a deferred transaction: a write that first read (every
  `store` checks its id) failed its lock upgrade at once with "database is locked", without
  waiting (see the lock-strategy table below).
- **Busy handler** (`database.LockWait`, 10 s): retries every 0.25–6 ms with jitter. SQLite's
  built-in timeout backs off to 100 ms sleeps, so long waiters keep losing the lock to new ones.
- **Read snapshots** (`database.read_transaction()`): recall, health, doctor and export read from
  one snapshot without the write lock; recall's `last_accessed` write is queued and done after the
  snapshot, waiting at most 0.5 s for the lock (skipped after that: it is advisory).
- **Checkpointing** (`database.WalCheckpointer`, the WAL hook, after each commit): a PASSIVE
  checkpoint each time the WAL has grown by 1000 frames (8 MiB at 8 KiB pages); from 32 MiB a
  TRUNCATE checkpoint that waits at most 200 ms for readers; `journal_size_limit` = 32 MiB.
  Stated bound: **WAL ≤ 32 MiB + 8 MiB + the largest single transaction**, as long as no reader
  keeps one snapshot open for much longer than 200 ms at every attempt (localmem's own reads last one call;
  a long `export` is the exception). Continuous readers keep SQLite from resetting the WAL after a
  PASSIVE checkpoint, which is why the TRUNCATE step is needed.
- **Errors**: full disk, read-only file, a lock held past 10 s and I/O errors are `StorageError`
  (503; 507 for a full disk) with a plain message, after the transaction was rolled back.
"""


def write_part(part: str, markdown: str) -> None:
    """Replace this part's block inside the reliability section (creating either if missing)."""
    assert part in PARTS
    text = RESULTS.read_text("utf-8") if RESULTS.exists() else "# localmem benchmarks\n"
    blocks: dict[str, str] = {}
    if SECTION_START in text and SECTION_END in text:
        before, rest = text.split(SECTION_START, 1)
        inner, after = rest.split(SECTION_END, 1)
        for name in PARTS:
            start, end = f"<!-- reliability/{name}:start -->", f"<!-- reliability/{name}:end -->"
            if start in inner and end in inner:
                blocks[name] = inner.split(start, 1)[1].split(end, 1)[0].strip("\n")
    else:
        before, after = text.rstrip("\n") + "\n\n", "\n"
    blocks[part] = markdown.strip("\n")
    body = [INTRO.rstrip("\n")]
    for name in PARTS:
        if name in blocks:
            body.append(f"<!-- reliability/{name}:start -->\n{blocks[name]}\n<!-- reliability/{name}:end -->")
    section = SECTION_START + "\n" + "\n\n".join(body) + "\n" + SECTION_END
    RESULTS.write_text(before + section + after, "utf-8")


def environment() -> str:
    import platform

    import apsw

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (f"Python {platform.python_version()}, apsw {apsw.apsw_version()} (SQLite {apsw.sqlite_lib_version()}); "
            f"{cpus} CPUs; {platform.platform()}")


def mib(value: float) -> str:
    return f"{value / 1024 / 1024:.1f} MiB"
