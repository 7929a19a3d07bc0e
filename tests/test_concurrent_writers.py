"""One MemoryStore driven by several threads at once, as the warm process and ``localmem serve`` drive theirs
(issue 44: a batch's model run overlaps other threads' recalls and writes on the one apsw connection).

A seeded random schedule per worker thread: the Stop hook's capture of a transcript another thread keeps
growing, prompt-hook answers, ``store`` / ``store_checked`` / ``store_many_checked`` / ``prepare_many`` then
its write (all of it, or a subset), ``update`` (content changes re-embed; tags only), ``delete``, ``forget``,
``supersede``, ``recall`` / ``recall_v1``, and one ``reembed`` to another dimension or another embedder name in
the middle. The embedder is the hash embedder behind a wrapper that sleeps a little in every call (the GIL
let go, as a model lets it go), so model runs of different threads overlap. The seed fixes each thread's
plan, not the interleaving.

Checked while the threads run (a checker thread, and ``check`` steps of the workers) and at the end:

* the derived indexes agree (``health()``), every memory has a vector, and every vector has the dimension
  the file records (``memory_embeddings`` against meta ``dimensions``);
* every message the capture ledger claims has its memories (claims and memories commit together);

and at the end only:

* every transcript message is captured exactly once (one ledger row, one memory, the ledger naming it; a
  turn logged twice, which capture folds by dedup, one memory both ledger rows name);
* every vector and token code is what the file's recorded embedder makes of the memory's content now
  (a vector made in the old space before a reembed must have been made again);
* every memory is found by its own content; every memory a worker stored (and nobody deleted) is there,
  every one deleted or forgotten is gone;
* every thread joined within its bound (no deadlock), and no exception but ``NotFoundError`` (a memory
  another thread deleted first) was raised (the prompt hook's unlocked scope reads and recall_v1 without one
  snapshot, found here, are fixed: a test each below);
* no statement ran on the connection from a thread not holding the store's lock (``LockWatch``).

Small by default (CI). Longer: ``LOCALMEM_CONCURRENCY_SEEDS`` (how many, default 2),
``LOCALMEM_CONCURRENCY_FIRST_SEED`` (default 0), ``LOCALMEM_CONCURRENCY_STEPS`` (each worker's steps,
default 20), ``LOCALMEM_CONCURRENCY_DAEMON_ROUNDS`` (the warm-process test's, default 3);
``python benchmarks/safety/concurrent_writers.py`` runs fresh seeds for a time budget.
"""

from __future__ import annotations

import faulthandler
import json
import os
import random
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from localmem import MemoryStore
from localmem.embedders import embed_batch
from localmem.embedders.hashing import HashEmbedder
from localmem.errors import NotFoundError
from localmem.hooks.events import answer_hook_with_report
from localmem.hooks.settings import HookSettings
from localmem.maintenance.forget import forget
from localmem.maintenance.reembed import reembed
from localmem.storage.database import read_transaction
from tests.claude_code_transcript import Transcript
from tests.hook_helpers import project_dir

SEEDS = int(os.environ.get("LOCALMEM_CONCURRENCY_SEEDS") or 2)
FIRST_SEED = int(os.environ.get("LOCALMEM_CONCURRENCY_FIRST_SEED") or 0)
STEPS = int(os.environ.get("LOCALMEM_CONCURRENCY_STEPS") or 20)
WORKERS = 4
JOIN_SECONDS = 120 + 4 * STEPS  # a loaded machine is slow; a deadlock never ends
SESSION = "0c7e5b1a-3d2f-4e6a-9b8c-7d6e5f4a3b21"
WORDS = ("orchid", "deploy", "cluster", "postgres", "cache", "schema", "rollout", "billing", "queue", "index",
         "ledger", "metrics", "tenant", "gateway", "cron", "replica", "backup", "token", "latency", "shard")
EXPECTED_ERRORS = (NotFoundError,)  # a memory another thread deleted, forgot or never got to store


class SlowHash:
    """The hash embedder of ``dimensions``, its texts prefixed by ``salt`` (another name: other vectors of the
    same length), each call sleeping ``delay`` per 8 texts: a model run other threads overlap."""

    def __init__(self, dimensions: int, salt: str = "", delay: float = 0.004) -> None:
        self.inner, self.salt, self.delay = HashEmbedder(dimensions), salt, delay
        self.dimensions = dimensions
        self.name = f"slow-hash{salt}-{dimensions}"
        self.calls = 0

    def _wait(self, texts: list[str]) -> list[str]:
        self.calls += 1
        time.sleep(self.delay * (1 + len(texts) / 8))
        return [f"{self.salt} {text}" if self.salt else text for text in texts]

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed(self._wait(texts))

    def embed_with_tokens(self, texts: list[str]) -> tuple[list[list[float]], list[Any]]:
        return self.inner.embed_with_tokens(self._wait(texts))


class Model:
    """What the workers did, as far as a finished call tells: the ids stored, and those deleted or forgotten."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stored: set[str] = set()
        self.removed: set[str] = set()
        self.counter = 0

    def text(self, rng: random.Random, kind: str) -> str:
        with self.lock:
            self.counter += 1
            n = self.counter
        words = " ".join(rng.choice(WORDS) for _ in range(5))
        return f"{kind} note number z{n}q{rng.randrange(10**6)} about the {words} work for this week"

    def add(self, ids: list[str]) -> None:
        with self.lock:
            self.stored.update(ids)

    def remove(self, ids: list[str]) -> None:
        with self.lock:
            self.removed.update(ids)

    def pick(self, rng: random.Random) -> str | None:
        with self.lock:
            live = sorted(self.stored - self.removed)
        return rng.choice(live) if live else None


class LockWatch:
    """Statements run on the store's connection by a thread that does not hold the store's lock (apsw's exec
    tracer): one apsw connection serves every thread, so such a statement makes another thread's call fail
    with ``ThreadingViolationError`` (or runs inside its transaction)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store, self.found = store, []
        store.conn.exec_trace = self

    def __call__(self, cursor: Any, sql: str, bindings: Any) -> bool:
        if not self.store.lock._is_owned():  # type: ignore[attr-defined]
            stack = "".join(traceback.format_stack(limit=10)[:-1])
            self.found.append(f"{threading.current_thread().name}: {sql.strip().splitlines()[0][:90]}\n{stack}")
        return True


class Run:
    """One example: the store, the transcript its session writes, the model and what went wrong."""

    def __init__(self, tmp: Path, seed: int) -> None:
        self.seed = seed
        self.path = tmp / "m.db"
        self.store = MemoryStore(self.path, embedder=SlowHash(64))
        self.watch = LockWatch(self.store)
        root = project_dir(tmp)
        self.cwd = str(root / "src")
        self.transcript = Transcript(tmp / f"{SESSION}.jsonl", SESSION, self.cwd)
        self.transcript.path.touch()
        self.messages: list[str] = []  # the uuids of the kept turns appended
        self.copies: dict[str, str] = {}  # a turn logged twice: the copy's uuid to the first's
        self.model = Model()
        self.failures: list[str] = []
        self.expected = 0  # expected errors seen
        self.checks = 0
        self.reembedded: dict[str, Any] | None = None
        self.unfinished_reembeds = 0
        self.other_connection_reembed = False  # a reembed ran through a second connection to the file
        self.settings = HookSettings()
        self.done = threading.Event()

    def payload(self, event: str, **extra: Any) -> dict[str, Any]:
        return {"session_id": SESSION, "transcript_path": str(self.transcript.path), "cwd": self.cwd,
                "hook_event_name": event, **extra}

    def guarded(self, name: str, step: Callable[[], None]) -> None:
        try:
            step()
        except EXPECTED_ERRORS:
            self.expected += 1
        except BaseException:  # noqa: BLE001 - every other failure is the finding
            self.failures.append(f"{name} (seed {self.seed}): {traceback.format_exc()}")


# -- the steps ------------------------------------------------------------------------------------------------


def step_store(run: Run, rng: random.Random) -> None:
    tags = [f"project:{rng.choice(WORDS)}"]
    if rng.random() < 0.5:
        run.model.add([run.store.store(run.model.text(rng, "single"), tags=tags)])
    else:
        answer = run.store.store_checked(run.model.text(rng, "checked"), tags=tags)
        assert not answer["deduped"], answer
        run.model.add([answer["id"]])


def step_store_many(run: Run, rng: random.Random) -> None:
    items = [{"content": run.model.text(rng, "batch"), "tags": ["batch"]} for _ in range(rng.randint(1, 12))]
    answers = run.store.store_many_checked(items, dedup=rng.random() < 0.5)
    assert not any(a["deduped"] for a in answers), answers
    run.model.add([a["id"] for a in answers])


def step_prepared(run: Run, rng: random.Random) -> None:
    items = [{"content": run.model.text(rng, "prepared")} for _ in range(rng.randint(1, 16))]
    prepared = run.store.prepare_many(items, redact=rng.random() < 0.5)
    time.sleep(rng.random() * 0.01)  # other threads write, and a reembed may swap, before this write
    if rng.random() < 0.4 and len(items) > 1:
        keep = sorted(rng.sample(range(len(items)), rng.randint(1, len(items) - 1)))
        prepared = prepared.subset(keep)
    answers = run.store.store_many_checked(prepared, dedup=rng.random() < 0.7, redact=prepared.redacted)
    run.model.add([a["id"] for a in answers])


def step_update(run: Run, rng: random.Random) -> None:
    memory_id = run.model.pick(rng)
    if memory_id is None:
        return
    if rng.random() < 0.7:
        run.store.update(memory_id, content=run.model.text(rng, "updated"))
    else:
        run.store.update(memory_id, tags=[f"edited:{rng.choice(WORDS)}"], importance=rng.random())


def step_delete(run: Run, rng: random.Random) -> None:
    memory_id = run.model.pick(rng)
    if memory_id is None:
        return
    if rng.random() < 0.5:
        run.store.delete(memory_id)
    else:
        answer = forget(run.store, [memory_id])
        if memory_id not in answer["ids"]:
            raise NotFoundError(f"forget did not find {memory_id}")  # another thread deleted it first
    run.model.remove([memory_id])


def step_supersede(run: Run, rng: random.Random) -> None:
    memory_id = run.model.pick(rng)
    if memory_id is None:
        return
    answer = run.store.supersede(memory_id, run.model.text(rng, "replacement"))
    run.model.add([answer["memory_id"]])


def step_recall(run: Run, rng: random.Random) -> None:
    query = " ".join(rng.choice(WORDS) for _ in range(3))
    if rng.random() < 0.7:
        assert "results" in run.store.recall(query, limit=5)
    else:
        assert "results" in run.store.recall_v1(query, k=5)  # one read snapshot, as recall's (since concur13)


def step_prompt(run: Run, rng: random.Random) -> None:
    prompt = f"What did we decide about the {rng.choice(WORDS)} and the {rng.choice(WORDS)} rollout?"
    answer_hook_with_report(run.store, "UserPromptSubmit", run.payload("UserPromptSubmit", prompt=prompt),
                            run.settings)


def step_capture(run: Run, rng: random.Random) -> None:
    report = answer_hook_with_report(run.store, "Stop", run.payload("Stop"), run.settings).report
    assert "captured" in report or "stored_messages" in json.dumps(report), report


def step_check(run: Run, rng: random.Random) -> None:
    check_consistent(run.store)
    run.checks += 1


STEPS_BY_WEIGHT: list[tuple[Callable[[Run, random.Random], None], int]] = [
    (step_store, 3), (step_store_many, 2), (step_prepared, 3), (step_update, 3), (step_delete, 2),
    (step_supersede, 1), (step_recall, 3), (step_prompt, 2), (step_capture, 3), (step_check, 1)]


# -- the invariants -------------------------------------------------------------------------------------------


def check_consistent(store: MemoryStore) -> None:
    """What holds between any two steps: the indexes agree, each memory has a vector of the recorded
    dimension, and each captured message's memories exist."""
    health = store.health()
    assert health["indexes_agree"], health
    assert health["memories_without_embedding"] == 0, health
    with store.lock, read_transaction(store.conn):
        store.backend.follow_reembed()  # as the store's next embedding does after another connection's reembed
        dims = int(store.backend.meta("dimensions") or 0)
        assert dims == store.dimensions, (dims, store.dimensions)
        wrong = store.conn.execute("SELECT count(*) FROM memory_embeddings WHERE length(embedding) != ?",
                                   (4 * dims,)).fetchone()[0]
        assert wrong == 0, f"{wrong} vectors of another dimension than the recorded {dims}"
        missing = store.conn.execute(
            "SELECT c.message_uuid, j.value FROM hook_captured AS c, json_each(c.memory_ids) AS j "
            "WHERE NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.id = j.value)").fetchall()
        assert not missing, f"claimed messages without their memories: {missing[:5]}"


def check_vectors_of_recorded_embedder(store: MemoryStore) -> None:
    """Every vector and token code is what the recorded embedder makes of the content now."""
    embedder = store.embedder
    with store.lock, read_transaction(store.conn):
        assert store.backend.meta("embedder") == embedder.name
        rows = store.conn.execute(
            "SELECT m.id, m.content, e.embedding, t.tokens, t.codes FROM memories AS m "
            "JOIN memory_embeddings AS e ON e.pk = m.pk LEFT JOIN token_codes AS t ON t.pk = m.pk").fetchall()
        contents = [row[1] for row in rows]
        vectors, tokens = embed_batch(embedder, contents, with_tokens=True) if rows else ([], [])
        codes = store.backend.token_codes(tokens) if rows else []
    stale = [row[0] for row, vector in zip(rows, vectors)
             if not np.allclose(np.frombuffer(row[2], dtype=np.float32), np.asarray(vector, dtype=np.float32),
                                atol=1e-6)]
    assert not stale, f"{len(stale)} vectors not made by the recorded {embedder.name}: {stale[:3]}"
    wrong_codes = [row[0] for row, code in zip(rows, codes) if code is not None and (row[3], row[4]) != code]
    assert not wrong_codes, f"{len(wrong_codes)} token codes not of the recorded embedder: {wrong_codes[:3]}"


def check_captured_once(store: MemoryStore, messages: list[str], copies: dict[str, str] | None = None) -> None:
    """Every message appended to the session's transcript has one ledger row and one memory, the row naming
    it; a turn logged twice (``copies``: the copy's uuid to the first's) is one memory both rows name."""
    first = {m: (copies or {}).get(m, m) for m in messages}
    with store.lock, read_transaction(store.conn):
        ledger = {row[0]: json.loads(row[1]) for row in store.conn.execute(
            "SELECT message_uuid, memory_ids FROM hook_captured WHERE session_id = ?", (SESSION,))}
        held: dict[str, list[str]] = {}  # the memories holding each turn (said once or logged twice)
        for memory_id, message in store.conn.execute(
                "SELECT id, json_extract(metadata, '$.message_uuid') FROM memories "
                "WHERE json_extract(metadata, '$.session') = ?", (SESSION,)):
            held.setdefault(first.get(message, message), []).append(memory_id)
    assert set(ledger) == set(messages), (
        f"ledger holds {len(ledger)} messages, {len(messages)} appended; "
        f"missing {sorted(set(messages) - set(ledger))[:3]}, extra {sorted(set(ledger) - set(messages))[:3]}")
    twice = {m: got for m, got in held.items() if len(got) != 1}
    assert not twice, f"messages not captured exactly once: {list(twice.items())[:3]}"
    assert set(held) == set(first.values())
    wrong = [m for m in messages if ledger[m] != held[first[m]]]
    assert not wrong, f"the ledger names other memories for {wrong[:3]}"


def check_found_by_content(store: MemoryStore) -> dict[str, str]:
    """Every memory is among recall's first 10 for its own content; returns the contents by id."""
    with store.lock, read_transaction(store.conn):
        contents = dict(store.conn.execute("SELECT id, content FROM memories").fetchall())
    for memory_id, content in contents.items():
        found = store.recall(content, limit=10, state_mode="history")["results"]
        assert memory_id in [r["memory"]["id"] for r in found], f"{memory_id} not found by its content {content!r}"
    return contents


def check_final(run: Run) -> None:
    store = run.store
    check_consistent(store)
    check_vectors_of_recorded_embedder(store)
    check_captured_once(store, run.messages, run.copies)
    ids = set(check_found_by_content(store))
    model = run.model
    lost = (model.stored - model.removed) - ids
    assert not lost, f"stored, never deleted, gone: {lost}"
    assert not model.removed & ids, f"deleted or forgotten, still there: {model.removed & ids}"


# -- the threads ----------------------------------------------------------------------------------------------


def worker(run: Run, index: int) -> None:
    rng = random.Random(f"{run.seed}:{index}")
    steps, weights = zip(*STEPS_BY_WEIGHT)
    for _ in range(STEPS):
        step = rng.choices(steps, weights)[0]
        run.guarded(step.__name__, lambda: step(run, rng))


def transcript_writer(run: Run) -> None:
    """Appends a user turn and an assistant turn (each kept by capture) at random moments, now and then the
    lines capture skips (a tool round, a snapshot) or a user turn logged twice."""
    rng = random.Random(f"{run.seed}:transcript")
    while not run.done.is_set():
        run.messages.append(run.transcript.user(run.model.text(rng, "asked").replace("note", "request")))
        if rng.random() < 0.1:  # the same turn logged twice (its words and time, another uuid)
            copy = json.loads(run.transcript.path.read_text("utf-8").splitlines()[-1])
            copy["uuid"] = f"copy-{run.seed}-{len(run.copies)}-{copy['uuid']}"
            run.transcript.write(copy)
            run.copies[copy["uuid"]] = run.messages[-1]
            run.messages.append(copy["uuid"])
        if rng.random() < 0.3:
            run.transcript.tool_round("Bash", {"command": "ls"}, "src tests docs")
        run.messages.extend(run.transcript.assistant(run.model.text(rng, "answered")))
        if rng.random() < 0.2:
            run.transcript.snapshot()
        time.sleep(rng.random() * 0.05)


def reembedder(run: Run) -> None:
    """A reembed part-way: to another dimension or another embedder name of the same dimension in this
    store, or to another dimension through a second connection to the file (as another process runs it:
    this store follows the file); in half the examples a second one later, in this store, under a third name."""
    rng = random.Random(f"{run.seed}:reembed")
    way = rng.choice(["dimension", "name", "other connection"])
    time.sleep(0.05 + rng.random() * 1.5)
    if way == "other connection":
        run.other_connection_reembed = True
        with MemoryStore(run.path, embedder=SlowHash(64)) as other:
            run.reembedded = reembed(other, HashEmbedder(48), batch_size=rng.choice([8, 32]))
    else:
        target = SlowHash(48) if way == "dimension" else SlowHash(64, salt="b")
        run.reembedded = reembed(run.store, target, batch_size=rng.choice([8, 32]))
    run.unfinished_reembeds += run.reembedded["status"] == "in_progress"  # a write came after its last batch
    if rng.random() < 0.5:
        time.sleep(0.05 + rng.random() * 1.5)
        run.reembedded = reembed(run.store, SlowHash(64, salt="c"), batch_size=rng.choice([8, 32]))
        run.unfinished_reembeds += run.reembedded["status"] == "in_progress"


def checker(run: Run) -> None:
    while not run.done.wait(0.02):
        run.guarded("check", lambda: step_check(run, random.Random()))


def join_all(threads: list[threading.Thread], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        raise AssertionError(f"threads still running after {seconds:.0f} s (deadlock?): {stuck}")


def run_example(tmp: Path, seed: int) -> Run:
    run = Run(tmp, seed)
    try:
        workers = [threading.Thread(target=worker, args=(run, i), name=f"worker-{i}", daemon=True)
                   for i in range(WORKERS)]
        workers.append(threading.Thread(target=lambda: run.guarded("reembed", lambda: reembedder(run)),
                                        name="reembed", daemon=True))
        helpers = [threading.Thread(target=transcript_writer, args=(run,), name="transcript", daemon=True),
                   threading.Thread(target=checker, args=(run,), name="checker", daemon=True)]
        for thread in helpers + workers:
            thread.start()
        try:
            join_all(workers, JOIN_SECONDS)
        finally:
            run.done.set()
        join_all(helpers, 30)
        assert not run.failures, "\n".join(run.failures)
        assert not run.watch.found, "statements run without the store's lock:\n" + "\n".join(run.watch.found[:3])
        for _ in range(50):  # the last turns: a capture goes on where the one before stopped
            report = answer_hook_with_report(run.store, "Stop", run.payload("Stop"), run.settings).report
            if not report.get("more_to_read") and not report.get("stored_messages"):
                break
        while run.reembedded is not None and run.reembedded["status"] == "in_progress":
            run.reembedded = reembed(run.store, run.store.embedder)  # as its answer says: run it again
        assert run.reembedded is not None and run.reembedded["status"] == "complete", run.reembedded
        check_final(run)
        assert not run.watch.found, "statements run without the store's lock:\n" + "\n".join(run.watch.found[:3])
    finally:
        run.store.close()
    return run


@pytest.mark.parametrize("seed", range(FIRST_SEED, FIRST_SEED + SEEDS))
def test_many_writers_on_one_store_keep_it_whole(tmp_path, seed):
    run = run_example(tmp_path, seed)
    assert run.messages and run.checks > 0
    assert len(run.model.stored) > WORKERS  # the workers did write


# -- what the randomized runs found, each made deterministic --------------------------------------------------


def test_a_batch_prepared_before_a_reembed_to_another_dimension_is_written_with_dedup(tmp_path):
    """Found by seed 2 (4 workers, 25 steps): the near-duplicate check of a dedup write ran the vectors made
    before the reembed against the new index (ValueError: could not broadcast (1,64) into (1,48))."""
    with MemoryStore(tmp_path / "m.db", embedder=SlowHash(64, delay=0)) as store:
        store.store("the orchid cluster deploys nightly")
        prepared = store.prepare_many([{"content": "the orchid cluster deploys nightly"},
                                       {"content": "billing runs on the queue"}])
        reembed(store, SlowHash(48, delay=0))
        answers = store.store_many_checked(prepared, dedup=True)
        assert [a["deduped"] for a in answers] == [True, False]
        assert answers[0]["similar_checked"] and answers[1]["similar_checked"]
        check_consistent(store)
        check_vectors_of_recorded_embedder(store)


def test_the_prompt_hook_reads_the_file_only_under_the_stores_lock(tmp_path):
    """Found by seeds 2-5 (4 workers, 25 steps): supersede, health, a reembed's staging failed with
    ThreadingViolationError 'Connection is busy in another thread' while a prompt was answered."""
    run = Run(tmp_path, 0)
    try:
        run.store.store("the orchid cluster deploys nightly", tags=["project:elsewhere"])
        step_prompt_unlocked = answer_hook_with_report(
            run.store, "UserPromptSubmit", run.payload("UserPromptSubmit", prompt="How does the orchid deploy?"),
            run.settings)
        assert step_prompt_unlocked.report["event"] == "UserPromptSubmit"
        assert not run.watch.found, "\n".join(run.watch.found)
    finally:
        run.store.close()


# -- the same through the real warm process -------------------------------------------------------------------

DAEMON_ROUNDS = int(os.environ.get("LOCALMEM_CONCURRENCY_DAEMON_ROUNDS") or 3)


@pytest.mark.skipif(sys.platform != "linux", reason="the warm process needs Linux")
def test_the_warm_process_under_hooks_mcp_batches_and_cli_at_once(tmp_path):
    """``localmem daemon start`` on a temporary store; at once: Stop and prompt hooks (each a client
    process), the MCP SDK's client storing batches and recalling (through ``localmem mcp``'s front end),
    CLI stores and recalls; a transcript growing meanwhile. Then the same invariants, in-process."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters

    from tests.daemon_helpers import REPO, Warm

    warm = Warm(tmp_path / "memory.db").stocked("the orchid cluster deploys nightly with a blue-green rollout")
    root = project_dir(tmp_path)
    transcript = Transcript(tmp_path / f"{SESSION}.jsonl", SESSION, str(root / "src"))
    transcript.path.touch()
    messages: list[str] = []
    written: list[str] = []  # the contents stored through MCP and the CLI
    said: list[str] = []  # each hook's -v report: from the warm process or in-process, and why
    failures: list[str] = []
    done = threading.Event()
    rng = random.Random("daemon")
    model = Model()

    def payload(event: str, **extra: Any) -> dict[str, Any]:
        return {"session_id": SESSION, "transcript_path": str(transcript.path), "cwd": str(root / "src"),
                "hook_event_name": event, **extra}

    def guarded(name: str, body: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                body()
            except BaseException:  # noqa: BLE001
                failures.append(f"{name}: {traceback.format_exc()}")
        return run

    def grow() -> None:
        while not done.is_set():
            messages.append(transcript.user(model.text(rng, "asked").replace("note", "request")))
            messages.extend(transcript.assistant(model.text(rng, "answered")))
            time.sleep(0.1)

    def stops() -> None:
        for _ in range(DAEMON_ROUNDS * 2):
            said.append(warm.hook("Stop", payload("Stop"))[1])

    def prompts() -> None:
        for i in range(DAEMON_ROUNDS * 2):
            said.append(warm.hook("UserPromptSubmit", payload(
                "UserPromptSubmit", prompt=f"What did we decide about the {WORDS[i % len(WORDS)]} rollout?"))[1])

    # Every request succeeds: before the prompt hook read its project scope under the store's lock (fixed after
    # branch concur13), a capture or write on another thread failed with "Connection is busy in another thread".
    def succeeded(ok: bool, said_instead: str) -> bool:
        assert ok, said_instead
        return ok

    def cli() -> None:
        for i in range(DAEMON_ROUNDS * 2):
            content = model.text(rng, "cli")
            stored = warm.localmem("store", content, "-v")
            if succeeded(stored.returncode == 0, stored.stderr):
                written.append(content)
            found = warm.localmem("recall", WORDS[i % len(WORDS)], "-v")
            succeeded(found.returncode == 0, found.stderr)

    async def mcp_session() -> None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "localmem", "mcp"], cwd=str(REPO),
                                       env=warm.env)
        async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
            for i in range(DAEMON_ROUNDS * 2):
                batch = [model.text(rng, "mcp") for _ in range(8)]
                answer = await client.call_tool("store_memory", {"memories": [{"content": c} for c in batch]})
                if succeeded(not answer.is_error, json.dumps(answer.model_dump(), default=str)):
                    written.extend(batch)
                found = await client.call_tool("recall_memory", {"query": WORDS[i % len(WORDS)], "limit": 5})
                succeeded(not found.is_error, json.dumps(found.model_dump(), default=str))

    warm.start()
    try:
        warm.wait_running()
        clients = [threading.Thread(target=guarded(name, body), name=name, daemon=True) for name, body in (
            ("stops", stops), ("prompts", prompts), ("cli", cli), ("mcp", lambda: anyio.run(mcp_session)))]
        grower = threading.Thread(target=guarded("grow", grow), daemon=True)
        grower.start()
        for thread in clients:
            thread.start()
        try:
            join_all(clients, 600)
        finally:
            done.set()
        join_all([grower], 30)
        assert not failures, "\n".join(failures)
        for _ in range(50):
            answer, note = warm.hook("Stop", payload("Stop"))
            said.append(note)
            if "left for the next run" not in note and "capture: 0 message(s) stored" in note:
                break
        log = warm.logs()
        assert warm.status()["running"], log
        stop = warm.localmem("daemon", "stop")
        assert stop.returncode == 0, stop.stderr
    finally:
        warm.close()
    failed = [line for line in log.splitlines() if "Error" in line or "Traceback" in line]
    assert not failed, log
    in_process = [s for s in said if "not from the warm process" in s or ", from in-process" in s]
    assert not in_process, f"{len(in_process)} hooks answered in-process: {in_process[:2]}"
    with MemoryStore(warm.db, embedder="hash") as store:
        check_consistent(store)
        check_vectors_of_recorded_embedder(store)
        check_captured_once(store, messages)
        contents = check_found_by_content(store)
    assert sorted(c for c in contents.values() if c in set(written)) == sorted(written)


def test_a_turn_logged_twice_is_claimed_with_the_memory_that_holds_it(tmp_path):
    """A turn logged twice (the same words at the same time, another uuid) is stored once: capture writes
    with dedup on (docs/dedup.md). The ledger's row for the second copy names the memory that holds it."""
    run = Run(tmp_path, 0)
    try:
        said = "Please run the whole test suite again and show me the failures in the billing module."
        first = run.transcript.user(said)
        lines = run.transcript.path.read_text("utf-8").splitlines()
        copy = json.loads(lines[-1])
        copy["uuid"] = again = "9f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"
        run.transcript.write(copy)
        report = answer_hook_with_report(run.store, "Stop", run.payload("Stop"), run.settings).report
        assert report["deduped"] == 1 and report["stored_memories"] == 1, report
        with run.store.lock:
            rows = dict(run.store.conn.execute("SELECT message_uuid, memory_ids FROM hook_captured").fetchall())
        assert json.loads(rows[again]) == json.loads(rows[first])
        assert run.store.get(json.loads(rows[again])[0])["content"] == said
        check_consistent(run.store)  # every id the ledger names is a memory
    finally:
        run.store.close()


def test_a_reembed_by_another_connection_just_before_the_dedup_check_is_caught(tmp_path, monkeypatch):
    """As the test above, the reembed committed by another connection (another process) after the write
    brought its vectors into the file's space and before its near-duplicate kNN read the index."""
    path = tmp_path / "m.db"
    with MemoryStore(path, embedder="hash") as store, MemoryStore(path, embedder="hash") as other:
        store.store("the orchid cluster deploys nightly")
        prepared = store.prepare_many([{"content": "the orchid cluster deploys nightly"},
                                       {"content": "billing runs on the queue"}])
        brought = store._in_current_space

        def then_swapped(*args: Any) -> Any:
            found = brought(*args)
            if other.dimensions == 384:
                reembed(other, HashEmbedder(48))
            return found

        monkeypatch.setattr(store, "_in_current_space", then_swapped)
        answers = store.store_many_checked(prepared, dedup=True)
        assert [a["deduped"] for a in answers] == [True, False]
        assert not any(a["similar_checked"] for a in answers)  # said: no near-duplicate check ran
        assert store.dimensions == 48 and store.embedder.name == "hash-48"
        check_consistent(store)
        check_vectors_of_recorded_embedder(store)


def test_recall_v1_answers_when_another_connection_reembeds_during_it(tmp_path, monkeypatch):
    """Found by benchmarks/safety/concurrent_writers.py seed 7047 (60 steps): apsw.SQLError 'Vector dimension
    mismatch. First vector has 48 dimensions, while the second has 64' from kagura/pipeline.py's relevance read."""
    path = tmp_path / "m.db"
    with MemoryStore(path, embedder="hash") as store, MemoryStore(path, embedder="hash") as other:
        store.store("the orchid cluster deploys nightly")
        store.store("billing runs on the queue")
        embedded = store.backend.embed_query

        def then_swapped(*args: Any) -> Any:
            found = embedded(*args)
            if other.dimensions == 384:
                reembed(other, HashEmbedder(48))
            return found

        monkeypatch.setattr(store.backend, "embed_query", then_swapped)
        answer = store.recall_v1("orchid cluster deploys", k=5)
        assert answer["results"], answer
