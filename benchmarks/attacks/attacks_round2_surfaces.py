"""Issue 33 ("Nothing lost, no one in, round two"), part B, replayed for ``benchmarks/attacks/attacks.py``.

One function per item, shaped like the items of ``attacks.py`` (each takes its
``Context`` and returns a ``Tally``): the sign-in code kept off the browser's
command line (5), output paths that are not regular files (6), timestamps at
the calendar's ends (7, 9), push against servers that drip, flood or garble
their answers (11, 12, 13), a FIFO as the learned-rank model (14), non-ASCII
sign-in codes (15) and the browser page under ``/ui/static/`` (16). Every
server they start listens on 127.0.0.1 and is stopped before they return;
special files (FIFOs, symbolic links, sockets) are made inside the work folder.
Only the stdlib, httpx and localmem, like ``attack_kit``.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.attacks.attack_kit import Run, Server, Tally, clean_env, lost, snapshot, tracebacks

ADMIN = "admin-T0ken-round2-0123456789"
NON_ASCII_CODES = ["caf\u00e9", "\u00e9" * 32, "\u4e2d\u6587", "\U0001f600" * 8, "\u00ff" * 3, "a\u0301",
                   "%C3%A9", "%ED%A0%80", "%FF", "\u200b", "x" * 31 + "\u00e9"]
STAMPS = ["9999-12-31T23:59:59.999999Z", "9999-12-31T00:00:00Z", "0001-01-01T00:00:00Z",
          "0001-01-01T23:59:59.999999Z"]
DATED_QUERIES = ["what happened on 3 May 2023", "the garden in July", "news from 31 December 9999",
                 "plans for 1 January 0001", "what did we do last Tuesday", "the meeting on 2024-02-29"]


def _refused_cli(t: Tally, run: Run, note: str, *words: str) -> bool:
    if run.hung:
        return t.attempt(False, f"{note}: no exit within the timeout")
    good = run.refused and all(w in run.stderr for w in words)
    return t.attempt(good, f"{note}: exit {run.code}: {run.stderr.strip()[:300]}", error=run.crashed)


# -- 5. the sign-in code never on a command line --------------------------------------------------------------

FAKE_BROWSER = """#!{python}
import json, sys
with open({record!r}, "a") as handle:
    handle.write(json.dumps({{"argv": sys.argv, "cmdline": open("/proc/self/cmdline", "rb").read().decode()}}) + "\\n")
"""


@contextmanager
def ui_process(db: Path, env: dict[str, str], t: Tally, *options: str) -> Iterator[str]:
    """``localmem ui`` on a free port; yields the URL it printed. Tracebacks it wrote count as 500s."""
    log = db.with_name(f"ui-{time.monotonic_ns()}.log")
    with open(log, "wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "ui",
                                    *options], env=env, stdout=subprocess.PIPE, stderr=stderr, text=True)
        try:
            line = process.stdout.readline() if process.stdout else ""
            yield line.split(": ", 1)[1].strip() if ": " in line else ""
        finally:
            process.terminate()
            try:
                process.communicate(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
    t.errors += tracebacks(log.read_text(errors="replace"))


def _get(url: str, client: Any = None, deadline: float = 10.0) -> Any:
    """GET ``url`` until the server answers (it may still be starting); None: no answer."""
    import httpx

    own = client is None
    client = client or httpx.Client(timeout=5)
    end = time.monotonic() + deadline
    try:
        while True:
            try:
                return client.get(url, follow_redirects=True)
            except httpx.HTTPError:
                if time.monotonic() > end:
                    return None
                time.sleep(0.1)
    finally:
        if own:
            client.close()


def item5_open_code(ctx: Any) -> Tally:
    t = Tally("r2-5. `localmem ui --open`: the sign-in code off the command line",
              "`localmem ui --open` with a token set and a recording browser (`BROWSER`): what the browser is "
              "started with (argv and /proc/self/cmdline) must hold no code, the page it opens must be 0600 in a "
              "0700 directory and sign in; the printed link must still sign in")
    import httpx

    folder = ctx.dir("r2-item5")
    db = folder / "ui.db"
    ctx.cli.run("--db", str(db), "--embedder", "hash", "store", "A memory to see", cwd=folder, kind="r2-5 setup")
    for n in range(3):
        if ctx.out_of_time(t):
            break
        record = folder / f"browser{n}.jsonl"
        browser = folder / f"fake-browser{n}"
        browser.write_text(FAKE_BROWSER.format(python=sys.executable, record=str(record)))
        browser.chmod(0o700)
        env = clean_env(LOCALMEM_API_TOKEN=ADMIN, BROWSER=str(browser))
        with ui_process(db, env, t, "--open") as printed:
            deadline = time.monotonic() + 20
            while (not record.exists() or not record.read_text().strip()) and time.monotonic() < deadline:
                time.sleep(0.05)
            if not record.exists() or not record.read_text().strip():
                t.attempt(False, "the browser was not started within 20 s")
                continue
            started = json.loads(record.read_text().splitlines()[0])
            everything = " ".join(started["argv"]) + started["cmdline"]
            printed_code = printed.split("code=")[-1]
            t.attempt("code=" not in everything and printed_code not in everything,
                      f"the browser's command line: {everything[:200]}")
            page = Path(started["argv"][-1].removeprefix("file://"))
            private = (page.is_file() and stat.S_IMODE(page.stat().st_mode) == 0o600
                       and stat.S_IMODE(page.parent.stat().st_mode) == 0o700)
            t.attempt(private, f"the page {page}: not a 0600 file in a 0700 directory")
            link = page.read_text().split("url=", 1)[-1].split('"', 1)[0].replace("&amp;", "&") if private else ""
            for url in (link, printed):
                if not url:
                    continue
                with httpx.Client(timeout=5) as client:
                    answer = _get(url, client)
                    ok = answer is not None and answer.status_code == 200 and "app.js" in answer.text
                    listed = _get(url.split("/ui/")[0] + "/ui/api/memories", client) if ok else None
                t.attempt(ok and listed is not None and listed.status_code == 200,
                          f"signing in with {'the page' if url == link else 'the printed link'}: "
                          f"{getattr(answer, 'status_code', None)}")
            t.attempt(not page.parent.exists(), "the sign-in page is still there after its code was spent")
    return t


# -- 6. output paths that are not regular files ----------------------------------------------------------------


def special_files(folder: Path) -> list[tuple[str, Path]]:
    """(kind, path) of names that are not regular files, all inside ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "precious.txt").write_text("keep me\n")
    os.mkfifo(folder / "pipe")
    (folder / "to-file").symlink_to(folder / "precious.txt")
    (folder / "to-pipe").symlink_to("pipe")
    (folder / "dangling").symlink_to(folder / "nowhere")
    (folder / "chain").symlink_to("to-file")
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind(str(folder / "sock"))
    unix.close()  # the socket file stays
    return [("FIFO", folder / "pipe"), ("symbolic link", folder / "to-file"), ("symbolic link", folder / "to-pipe"),
            ("symbolic link", folder / "dangling"), ("symbolic link", folder / "chain"), ("socket", folder / "sock")]


def _kinds(paths: list[Path]) -> list[int]:
    return [os.lstat(p).st_mode for p in paths]


def item6_special_outputs(ctx: Any) -> Tally:
    t = Tally("r2-6. `export` / `backup --force` over a FIFO, a symlink, a socket",
              "`export PATH` and `backup PATH --force` where PATH is a FIFO, a symbolic link (to a file, to a "
              "FIFO, dangling, chained) or a socket, spelled absolute and relative: each must be refused naming "
              "the path and leave PATH and what it points to as they were")
    from localmem import MemoryStore

    folder = ctx.dir("r2-item6")
    db = folder / "w.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store_many([{"content": f"memory {i}"} for i in range(5)])
    before = snapshot(db)
    targets = special_files(folder / "specials")
    modes = _kinds([p for _, p in targets])
    for n in range(40):
        if ctx.out_of_time(t):
            break
        kind, path = targets[ctx.rng.randrange(len(targets))]
        spelled = str(path) if n % 2 else os.path.relpath(path, folder)
        argv = (("export", spelled) if n % 3 else ("backup", spelled, "--force"))
        run = ctx.cli.run("--db", str(db), *argv, cwd=folder, kind=f"r2-6 {argv[0]}", timeout=20)
        _refused_cli(t, run, f"{argv[0]} over a {kind} {spelled}", spelled, "not a regular file")
    t.attempt(_kinds([p for _, p in targets]) == modes, "a special file was replaced")
    t.attempt((folder / "specials" / "precious.txt").read_text() == "keep me\n", "the linked file changed")
    leftovers = [p.name for p in folder.rglob("*.tmp")]
    t.attempt(not leftovers, f"temporary files left: {leftovers}")
    for name in ("out.jsonl", "copy.db"):  # a new name, then a regular file, still work
        for _ in range(2):
            argv = ("export", name) if name.endswith("jsonl") else ("backup", name, "--force")
            run = ctx.cli.run("--db", str(db), *argv, cwd=folder, kind=f"r2-6 {argv[0]} ok")
            t.attempt(run.code == 0, f"{argv} refused: {run.stderr[:200]}", error=run.crashed)
    t.lose(lost(before, snapshot(db)), "the store changed")
    return t


# -- 7. timestamps at the calendar's ends -----------------------------------------------------------------------


def hash_model_file(path: Path) -> Path:
    """A learned-rank model that reads every feature for the hash embedder (so recall uses it)."""
    from localmem.recall.learned_rank import FEATURES

    trees = [{"feature": [i, -1, -1], "threshold": [0.5, 0.0, 0.0], "left": [1, 0, 0], "right": [2, 0, 0],
              "value": [0.0, -0.1, 0.1]} for i in range(len(FEATURES))]
    path.write_text(json.dumps({"format": 1, "features": list(FEATURES), "embedders": ["hash"], "depth": 1,
                                "trees": trees}))
    return path


def item7_calendar_ends(ctx: Any) -> Tally:
    t = Tally("r2-7. memories at the calendar's ends, dated recalls",
              f"`localmem serve` with a learned-rank model for its embedder: memories stamped {', '.join(STAMPS)} "
              "(some in a thread), then GET /recall and POST /api/v1/memory/recall with queries naming dates; "
              "every answer must be 200 with the learned ranking applied")
    folder = ctx.dir("r2-item7")
    env = clean_env(LOCALMEM_LEARNED_RANK_MODEL=str(hash_model_file(folder / "model.json")))
    server = Server(folder / "memory.db", env, folder / "serve.log")
    try:
        for i, stamp in enumerate(STAMPS * 2):
            body = {"content": f"the garden party number {i}", "timestamp": stamp}
            if i % 2:
                body["metadata"] = {"thread": "ends"}
            answer = server.request("POST", "/memory", json=body)
            status = getattr(answer, "status_code", None)
            t.attempt(status in (200, 201), f"storing at {stamp}: {status}",
                      error=status is None or status >= 500)
        before = snapshot(folder / "memory.db")
        for n in range(60):
            if ctx.out_of_time(t):
                break
            query = f"garden party {ctx.rng.choice(DATED_QUERIES)}"
            if n % 2:
                answer = server.request("GET", "/recall", params={"query": query})
            else:
                answer = server.request("POST", "/api/v1/memory/recall", json={"query": query, "k": 5})
            status = getattr(answer, "status_code", None)
            applied = status == 200 and answer.json().get("learned_rank", {}).get("applied") is True
            t.attempt(applied, f"{'GET /recall' if n % 2 else 'POST recall_v1'} {query!r}: {status} "
                               f"{answer.text[:200] if answer is not None else 'no answer'}",
                      error=status is None or status >= 500)
    finally:
        t.errors += tracebacks(server.stop())
    t.lose(lost(before, snapshot(folder / "memory.db")), "the store changed")
    return t


# -- 9, 11, 12, 13. push against servers that misbehave ------------------------------------------------------------


@contextmanager
def raw_server(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A loopback TCP server whose ``answer(connection)`` writes whatever bytes it likes."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            self.request.settimeout(30)
            try:
                self.request.recv(65536)
                answer(self.request)
            except OSError:
                pass

    class Threaded(socketserver.ThreadingMixIn, socketserver.TCPServer):
        daemon_threads = True
        allow_reuse_address = True

    server = Threaded(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def automem_like(snapshot_body: Any) -> Iterator[str]:
    """A stand-in for AutoMem on 127.0.0.1: the first batch create's answer is lost, later ones are
    answered; ``GET /graph/snapshot`` answers ``snapshot_body``; anything else succeeds."""
    import http.server

    batches = [0]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _json(self, value: Any) -> None:
            body = json.dumps(value).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length)) if length else None
            route = self.path.split("?")[0]
            if route == "/health":
                self._json({"status": "healthy"})
            elif route == "/graph/snapshot":
                self._json(snapshot_body)
            elif route == "/memory/batch":
                batches[0] += 1
                if batches[0] == 1:
                    self.close_connection = True  # landed or not: the answer is lost
                    return
                self._json({"status": "success", "memory_ids": [f"r{batches[0]}-{i}"
                                                                for i in range(len(payload["memories"]))]})
            else:
                self._json({"status": "success"})

        do_GET = do_POST = do_PATCH = do_DELETE = _answer

    class Threaded(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Threaded(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _push_store(folder: Path, name: str, stamp: str | None = None) -> Path:
    from localmem import MemoryStore

    path = folder / name
    with MemoryStore(path, embedder="hash") as store:
        store.store(f"a memory to push ({stamp or 'now'})", **({"timestamp": stamp} if stamp else {}))
    return path


def _push(ctx: Any, db: Path, url: str, *options: str, timeout: float = 60) -> Run:
    env = clean_env(AUTOMEM_API_TOKEN="round2-token")
    return ctx.cli.run("--db", str(db), "push", url, *options, cwd=db.parent, env=env, timeout=timeout,
                       kind="r2 push")


def item9_push_calendar(ctx: Any) -> Tally:
    t = Tally("r2-9. push: a lost create of a memory at the calendar's ends",
              f"`localmem push` of one memory stamped {', '.join(STAMPS)} to an AutoMem stand-in that loses the "
              "first create's answer; then a second push: each must finish (exit 0) with the memory created once")
    folder = ctx.dir("r2-item9")
    for n in range(8):
        if ctx.out_of_time(t):
            break
        stamp = STAMPS[n % len(STAMPS)]
        db = _push_store(folder, f"p{n}.db", stamp)
        with automem_like({"nodes": []}) as url:
            for round_ in (1, 2):
                run = _push(ctx, db, url, "--retries", "1", "--json")
                created = json.loads(run.stdout)["memories"]["created"] if run.code == 0 else None
                t.attempt(run.code == 0 and created == (1 if round_ == 1 else 0),
                          f"push {round_} of a memory at {stamp}: exit {run.code}, created {created}: "
                          f"{run.stderr[-300:]}", error=run.crashed)
    return t


def drip(data: bytes, every: float = 0.05) -> Callable[[socket.socket], None]:
    def answer(connection: socket.socket) -> None:
        for byte in data:
            connection.sendall(bytes([byte]))
            time.sleep(every)
    return answer


def item11_push_drip(ctx: Any) -> Tally:
    t = Tally("r2-11. push: a server that drips its answer",
              "`localmem push --timeout 2 --retries 0` against servers sending the status line, the headers or "
              "the body one byte every 50 ms: each push must end within 2 s of its request (8 s with start-up), "
              "saying so")
    body = b'{"status": "healthy"}' + b" " * 300
    answers = [drip(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body),
               drip(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 300 + b"\r\n\r\n"),
               drip(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1\r\n \r\n" * 200)]
    folder = ctx.dir("r2-item11")
    db = _push_store(folder, "p.db")
    for n in range(6):
        if ctx.out_of_time(t):
            break
        with raw_server(answers[n % len(answers)]) as url:
            run = _push(ctx, db, url, "--timeout", "2", "--retries", "0", timeout=30)
        t.attempt(run.code == 1 and "within 2 s" in run.stderr and run.seconds < 8,
                  f"drip {n % len(answers)}: exit {run.code} after {run.seconds:.1f} s: {run.stderr[-200:]}",
                  error=run.crashed)
    return t


def item12_push_flood(ctx: Any) -> Tally:
    t = Tally("r2-12. push: an answer larger than it reads",
              "`localmem push` against servers that declare a 1 GiB body (Content-Length) or stream one past "
              "the 256 MiB limit (chunked): each must be refused with an error saying so, not read whole")
    from localmem.replication import push_client

    limit = getattr(push_client, "MAX_ANSWER_BYTES", 256 << 20)  # (a version without a limit: the same)

    def declared(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n{" % (1 << 30))
        time.sleep(3)

    def streamed(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b" " * (1 << 20)
        for _ in range(limit // len(chunk) + 2):
            connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    folder = ctx.dir("r2-item12")
    db = _push_store(folder, "p.db")
    for n, answer in enumerate([declared, declared, streamed, declared, streamed]):
        if ctx.out_of_time(t):
            break
        with raw_server(answer) as url:
            run = _push(ctx, db, url, "--timeout", "30", "--retries", "0", timeout=60)
        t.attempt(run.code == 1 and "localmem push reads" in run.stderr,
                  f"{answer.__name__}: exit {run.code}: {run.stderr[-200:]}", error=run.crashed)
    return t


MALFORMED_SNAPSHOTS: list[Any] = [
    {"nodes": "not a list"}, {"nodes": [1, 2]}, {"nodes": [None]}, {"nodes": [{"metadata": {}}]},
    {"nodes": {"id": "x"}}, {"nodes": [{"id": ["x"]}]}, {"nodes": [{"id": 7, "metadata": "{}"}]},
    {"nodes": [[]]}, {"nodes": True}, ["nodes"], "nodes", 3, None,
]


def item13_push_snapshot(ctx: Any) -> Tally:
    t = Tally("r2-13. push: a malformed /graph/snapshot while reconciling",
              f"`localmem push` after a lost create, with {len(MALFORMED_SNAPSHOTS)} malformed snapshot answers: "
              "each push must finish (exit 0) and say that the look-up failed, with no traceback")
    folder = ctx.dir("r2-item13")
    for n, body in enumerate(MALFORMED_SNAPSHOTS):
        if ctx.out_of_time(t):
            break
        db = _push_store(folder, f"p{n}.db")
        with automem_like(body) as url:
            run = _push(ctx, db, url, "--retries", "1", "--json")
        warned = run.code == 0 and any("/graph/snapshot" in w for w in json.loads(run.stdout)["warnings"])
        t.attempt(warned, f"snapshot {json.dumps(body)[:60]}: exit {run.code}: {run.stderr[-200:]}",
                  error=run.crashed)
    return t


# -- 14. a FIFO as the learned-rank model ------------------------------------------------------------------------


def item14_model_fifo(ctx: Any) -> Tally:
    t = Tally("r2-14. LOCALMEM_LEARNED_RANK_MODEL naming a FIFO, a socket, a directory",
              "`localmem recall` with the model path a FIFO, a symbolic link to one, a socket or a directory: "
              "each recall must answer (exit 0) within 20 s and say on stderr why the model is not used")
    folder = ctx.dir("r2-item14")
    db = folder / "m.db"
    ctx.cli.run("--db", str(db), "--embedder", "hash", "store", "The garden party is on Sunday", cwd=folder,
                kind="r2-14 setup")
    special_files(folder / "specials")
    paths = [folder / "specials" / "pipe", folder / "specials" / "to-pipe", folder / "specials" / "sock",
             folder / "specials"]
    for n in range(12):
        if ctx.out_of_time(t):
            break
        path = paths[n % len(paths)]
        env = clean_env(LOCALMEM_LEARNED_RANK_MODEL=str(path))
        run = ctx.cli.run("--db", str(db), "--embedder", "hash", "recall", "garden party Sunday", cwd=folder,
                          env=env, timeout=20, kind="r2-14 recall")
        t.attempt(not run.hung and run.code == 0 and "learned ranking unavailable" in run.stderr,
                  f"model {path.name}: exit {run.code}{' (hung)' if run.hung else ''}: {run.stderr[-200:]}",
                  error=run.crashed)
    return t


# -- 15, 16. the browser's sign-in and its page's headers ---------------------------------------------------------

PAGE_HEADERS = ("content-security-policy", "referrer-policy", "cache-control")


def item15_16_browser(ctx: Any) -> tuple[Tally, Tally]:
    t15 = Tally("r2-15. /ui/login?code=<non-ASCII> while a code is pending",
                f"`localmem ui` with a token (a code pending): {len(NON_ASCII_CODES)} non-ASCII and undecodable codes, "
                "several times each; each must be a 4xx that signs nobody in, and the pending code must still work")
    t16 = Tally("r2-16. the browser's pages under /ui/static/",
                "`localmem ui` and `localmem serve`: index.html and login.html under /ui/static/ in 8 spellings; "
                "any HTML page answered must carry CSP (frame-ancestors), Referrer-Policy and no-store")
    import httpx

    folder = ctx.dir("r2-item15")
    db = folder / "ui.db"
    ctx.cli.run("--db", str(db), "--embedder", "hash", "store", "A memory to see", cwd=folder, kind="r2-15 setup")
    spellings = ["/ui/static/index.html", "/ui/static/login.html", "/ui/static/./index.html",
                 "/ui/static/x/../index.html", "/ui/static//index.html", "/ui/static/%69ndex.html",
                 "/ui/static/index.html?x=1", "/ui/static/INDEX.HTML"]
    with ui_process(db, clean_env(LOCALMEM_API_TOKEN=ADMIN), t15) as printed:
        base = printed.split("/ui/")[0]
        with httpx.Client(base_url=base, timeout=10) as client:
            _get(f"{base}/health", client)
            for _ in range(4):
                for code in NON_ASCII_CODES:
                    if ctx.out_of_time(t15):
                        break
                    try:
                        answer = client.get(f"/ui/login?code={code}", follow_redirects=False)
                    except httpx.HTTPError as exc:
                        t15.attempt(False, f"{code!r}: no answer: {exc}", error=True)
                        continue
                    t15.attempt(400 <= answer.status_code < 500 and "set-cookie" not in answer.headers,
                                f"{code!r}: {answer.status_code}", error=answer.status_code >= 500)
            signed = client.get(printed[len(base):], follow_redirects=False)
            t15.attempt(signed.status_code == 303 and "set-cookie" in signed.headers,
                        f"the pending code after the attacks: {signed.status_code}")
            _check_pages(t16, client, spellings, "ui")
    if ctx.open is not None:
        _check_pages(t16, ctx.open.client, spellings, "serve")
    return t15, t16


def _check_pages(t: Tally, client: Any, spellings: list[str], where: str) -> None:
    for path in spellings:
        answer = client.get(path, follow_redirects=False)
        html = answer.headers.get("content-type", "").startswith("text/html") and answer.status_code == 200
        missing = [h for h in PAGE_HEADERS if h not in answer.headers] if html else []
        framed = "frame-ancestors 'none'" in answer.headers.get("content-security-policy", "") if html else True
        t.attempt(not missing and framed, f"{where} {path}: {answer.status_code} without {missing}",
                  error=answer.status_code >= 500)


def item15_login_codes(ctx: Any) -> Tally:
    t15, t16 = item15_16_browser(ctx)
    ctx.round2_pages = t16  # the same server's answers; item 16 reports them
    return t15


def item16_static_pages(ctx: Any) -> Tally:
    done = getattr(ctx, "round2_pages", None)
    return done if done is not None else item15_16_browser(ctx)[1]


ROUND2_SURFACES: list[tuple[str, Callable[[Any], Tally]]] = [
    ("r2-5", item5_open_code), ("r2-6", item6_special_outputs), ("r2-7", item7_calendar_ends),
    ("r2-9", item9_push_calendar), ("r2-11", item11_push_drip), ("r2-12", item12_push_flood),
    ("r2-13", item13_push_snapshot), ("r2-14", item14_model_fifo), ("r2-15", item15_login_codes),
    ("r2-16", item16_static_pages),
]
