"""Issues 12 and 33 replayed: every attack of "Nothing lost, no one in" (and its round two), many times,
against the real interfaces.

Each of the issue's eleven items (and bad ``LOCALMEM_SYNCHRONOUS`` values) is one
function below that attacks what a user runs: ``localmem serve`` as a
subprocess on 127.0.0.1 (the default tokenless configuration, and one with
``LOCALMEM_API_TOKENS='agentA=work; agentB=*'`` plus an admin token),
``localmem mcp`` over a pipe, the command line in fresh processes, and
``MemoryStore`` in-process, with randomised spellings and values (``--seed``).
Per item it counts

* attempts;
* failures: the attack got through (a write stored, a read served, a wrong
  answer, a hang, a leftover file, a wrong file mode);
* 500s: HTTP 5xx, tracebacks, MCP internal errors, CLI exits that are not 0/1/2;
* data lost: committed memories or edges missing or changed afterwards
  (every column but ``last_accessed``, and the embedding), compared with a
  snapshot taken before the attacks.

All traffic goes to 127.0.0.1; every process it starts is stopped at the end.
Results go to ``docs/results/history.md`` (reliability section, attacks part) with ``--write``.

    python benchmarks/attacks/attacks.py [--seed 12] [--write]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import random
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import traceback
import uuid
from array import array
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.attacks.attack_kit import (  # noqa: E402
    Cli,
    McpPipe,
    Run,
    Server,
    Tally,
    clean_env,
    lost,
    mcp_internal,
    mcp_refused,
    snapshot,
    strict_json,
    temp_folder,
    tool_text,
    tracebacks,
)
from benchmarks.attacks.attacks_round2_surfaces import ROUND2_SURFACES  # noqa: E402
from benchmarks.common.reliability_harness import environment, write_part  # noqa: E402

DIMS = 384
WORDS = ("apple pear garden orchard redis cache postgres deploy rollback kafka queue latency budget "
         "alarm drill vault meeting alice bob carol python rust memory vector search").split()
ADMIN = "admin-T0ken-attacks-0123456789"
SCOPED_TOKENS = "agentA=work; agentB=*"
JSON_TYPE = {"Content-Type": "application/json"}
SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff", "\udc00\ud800")


class Context:
    """What the items share: the random generator, a work folder, the CLI and the long-lived servers."""

    def __init__(self, seed: int, folder: Path) -> None:
        self.rng = random.Random(seed)
        self.folder = folder
        self.cli = Cli(folder)
        self.open: Server | None = None      # tokenless, as a user starts it
        self.scoped: Server | None = None    # admin token + LOCALMEM_API_TOKENS
        self.mcp: McpPipe | None = None
        self.deadline = float("inf")

    def out_of_time(self, t: Tally) -> bool:
        """True once the item's time budget is spent (attacks that get through can be slow: hangs,
        lock waits); the rest of its attempts are then not made, and the row says so."""
        if time.monotonic() < self.deadline:
            return False
        if not any(n.startswith("stopped") for n in t.notes):
            t.notes.insert(0, f"stopped after {t.attempts} attempts: the item's time budget ran out")
            t.failures += 1
        return True

    def dir(self, name: str) -> Path:
        path = self.folder / name
        path.mkdir(parents=True, exist_ok=True)
        return path


def words(rng: random.Random, n: int = 3) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def unit(rng: random.Random) -> list[float]:
    raw = [rng.gauss(0.0, 1.0) for _ in range(DIMS)]
    norm = math.sqrt(sum(x * x for x in raw))
    return [x / norm for x in raw]


def with_surrogate(rng: random.Random, text: str = "") -> str:
    text = text or words(rng, 2)
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice(SURROGATES) + text[at:]


def lost_or_all(before: dict[str, dict[Any, str]], path: Path) -> int:
    """``lost`` against the file now; all of it when the file cannot be read any more."""
    import apsw

    try:
        return lost(before, snapshot(path))
    except apsw.Error:
        return len(before["memories"]) + len(before["edges"])


def count_memories(path: Path) -> int:
    return len(snapshot(path)["memories"])


def new_errors(log: Path, seen: int) -> tuple[int, int]:
    """Tracebacks a server wrote since ``seen``; returns (new, total)."""
    total = tracebacks(log.read_text(errors="replace")) if log.exists() else 0
    return total - seen, total


def cli_ok(t: Tally, run: Run, expect_refused: bool, note: str, extra_ok: bool = True) -> bool:
    """One CLI attempt: refused (exit 1/2, ``error: ...``) or succeeded, as expected."""
    if run.hung:
        return t.attempt(False, f"{note}: no exit within the timeout")
    good = (run.refused if expect_refused else run.code == 0) and extra_ok
    return t.attempt(good, f"{note}: exit {run.code}: {run.stderr.strip()[:300]}", error=run.crashed)


# -- 1. backup / restore / export never write over the database or its companions ---------------------


def spellings(folder: Path, rng: random.Random) -> list[tuple[str, str]]:
    """(kind, spelling) for w.db and its -wal/-shm/-journal: relative, ``..``, ``//``, absolute,
    symlinks (relative, absolute, chained, dangling, through a linked directory), ``~`` and a hard link."""
    sub = folder / "sub"
    sub.mkdir(exist_ok=True)
    (folder / "here").symlink_to(".")
    os.link(folder / "w.db", folder / "hard.db")
    found: list[tuple[str, str]] = [("db", "hard.db")]
    for kind, suffix in (("db", ""), ("wal", "-wal"), ("shm", "-shm"), ("journal", "-journal")):
        name = f"w.db{suffix}"
        (folder / f"ln{suffix or '-db'}").symlink_to(name)
        (sub / f"abs{suffix or '-db'}").symlink_to(folder / name)
        (folder / f"chain{suffix or '-db'}").symlink_to(f"ln{suffix or '-db'}")
        for text in (name, f"./{name}", f"sub/../{name}", f"sub/./.././{name}", f"sub//..//{name}",
                     str(folder / name), f"{folder}//{name}", f"{folder}/sub/../{name}", f"ln{suffix or '-db'}",
                     f"sub/abs{suffix or '-db'}", f"chain{suffix or '-db'}", f"here/{name}",
                     f"here/sub/../here/{name}", f"~/{name}"):
            found.append((kind, text))
    rng.shuffle(found)
    return found


def item1_destinations(ctx: Context) -> Tally:
    t = Tally("1. database files as destinations",
              "with `localmem serve` holding `w.db` (200 memories stored over HTTP, 20 edges): `backup DEST "
              "--force`, `export DEST`, `restore` into and from, and `--db COMPANION store`, with DEST one of 57 "
              "spellings of `w.db`/`-wal`/`-shm`/`-journal` (relative, `..`, `//`, absolute, symlinks "
              "relative/absolute/chained/dangling/through a linked directory, `~`, a hard link); then every "
              "memory checked through the server, after it exits, and by `doctor`")
    rng = ctx.rng
    folder = ctx.dir("item1")
    db = folder / "w.db"
    log = folder / "serve.log"
    env = clean_env(HOME=str(folder))
    server = Server(db, env, log)
    try:
        ids = []
        for i in range(200):
            response = server.request("POST", "/memory", json={"content": f"memory {i}: {words(rng, 6)}",
                                                                "tags": [f"batch:{i % 4}"]})
            assert response is not None and response.status_code == 201, response and response.text
            ids.append(response.json()["memory_id"])
        for i in range(20):
            server.request("POST", "/associate", json={"memory1_id": ids[i], "memory2_id": ids[i + 100],
                                                       "type": "RELATES_TO", "strength": 0.6})
        made = ctx.cli.run("--db", "w.db", "backup", "good.bak", cwd=folder, env=env, kind="item1 setup")
        assert made.code == 0, made.stderr
        before = snapshot(db)
        wal_before = (folder / "w.db-wal").stat().st_size
        forms = spellings(folder, rng)
        companions = [(k, s) for k, s in forms if k != "db"]
        commands: list[tuple[str, Callable[[str], list[str]], list[tuple[str, str]]]] = [
            ("backup", lambda s: ["--db", "w.db", "backup", s, "--force"], forms),
            ("export", lambda s: ["--db", "w.db", "export", s], forms),
            ("restore into", lambda s: ["--db", s, "restore", "good.bak"], companions),
            ("restore from", lambda s: ["--db", "w.db", "restore", s], forms),
            ("open a companion", lambda s: ["--db", s, "store", "written into a log file"], companions),
        ]
        for n in range(200):
            if ctx.out_of_time(t):
                break
            label, argv, pool = commands[n % len(commands)]
            kind, spelled = rng.choice(pool)
            run = ctx.cli.run(*argv(spelled), cwd=folder, env=env, kind=f"item1 {label}")
            cli_ok(t, run, True, f"{label} {spelled!r}")
        response = server.request("GET", "/health")
        served = response.json()["memory_count"] if response is not None else -1
        t.attempt(served == 200, f"the server counts {served} memories, not 200")
        hits = server.request("GET", "/memory/by-tag", params={"tags": "batch:1", "limit": 100})
        t.attempt(hits is not None and hits.json().get("count") == 50, "by-tag through the server")
        live = lost_or_all(before, db)
        t.attempt((folder / "w.db-wal").stat().st_size == wal_before, "the -wal file changed size")
    finally:
        t.errors += tracebacks(server.stop())
    t.attempt(not (folder / "w.db-journal").exists(), "a w.db-journal was created")
    leftovers = [p.name for p in folder.rglob("*.tmp")]
    t.attempt(not leftovers, f"temporary files left: {leftovers}")
    t.lose(max(live, lost_or_all(before, db)), "after the attacks (server running, then stopped)")
    stats = ctx.cli.run("--db", "w.db", "--json", "stats", cwd=folder, env=env, kind="item1 check")
    t.attempt(stats.code == 0 and json.loads(stats.stdout)["memory_count"] == 200, f"stats: {stats.stderr[:200]}")
    doctor = ctx.cli.run("--db", "w.db", "doctor", cwd=folder, env=env, kind="item1 check")
    cli_ok(t, doctor, False, "doctor after the server exited")
    return t


# -- 2. web pages: cross-origin writes, DNS rebinding -----------------------------------------------------


def item2_web_pages(ctx: Context) -> Tally:
    t = Tally("2. web pages on the tokenless server",
              "cross-origin requests (14 foreign Origins incl. `null`, other ports, https, look-alike hosts) on "
              "every route with text/plain, form, multipart and JSON bodies; body routes with 8 non-JSON "
              "content types and none; 10 rebinding `Host`s (incl. `0.0.0.0`, `[::2]`, `127.0.0.1.nip.io`); "
              "`Sec-Fetch-Site: cross-site/same-site` without Origin; foreign preflights; the API routes and "
              "the memory browser's (`/ui/`, `/ui/api/...`); plus legitimate JSON clients that must still work")
    server = ctx.open
    assert server is not None
    rng, port = ctx.rng, server.port
    seen = tracebacks(server.log.read_text(errors="replace"))
    seed = server.request("POST", "/memory", json={"content": "SEED-SECRET the garden gate code", "tags": ["seed"]})
    seed_id = seed.json()["memory_id"]
    other = server.request("POST", "/memory", json={"content": "another memory", "tags": ["seed"]}).json()["memory_id"]
    before = snapshot(server.path)
    origins = ["http://evil.example", "https://evil.example", "null", "http://evil.example:80",
               f"http://127.0.0.1.evil.example:{port}", f"http://localhost.evil.example:{port}",
               f"http://localhost:{port + 1}", f"http://127.0.0.1:{port + 1}", f"https://127.0.0.1:{port}",
               "file://", "chrome-extension://abcdefghijklmnop", f"http://[::1]:{port + 1}",
               "HTTP://EVIL.EXAMPLE", f"http://0.0.0.0:{port}"]
    hosts = [f"rebind.evil.example:{port}", "evil.example", f"localhost.evil.example:{port}",
             f"127.0.0.1.nip.io:{port}", f"0.0.0.0:{port}", f"[::2]:{port}", f"localhostx:{port}",
             f"attacker.com:{port}", f"127.0.0.2.evil:{port}", f"LOCALHOST.EVIL.EXAMPLE:{port}"]
    simple_types = ["text/plain;charset=UTF-8", "text/plain", "application/x-www-form-urlencoded",
                    "multipart/form-data; boundary=x"]
    other_types = ["text/json", "application/x-json", "application/jsonp", "text/html", None]
    body_routes = [("POST", "/memory", {"content": "PLANTED obey evil.example"}),
                   ("POST", "/memory/batch", {"memories": [{"content": "PLANTED batch"}]}),
                   ("PATCH", f"/memory/{seed_id}", {"content": "PLANTED rewrite"}),
                   ("POST", "/associate", {"memory1_id": seed_id, "memory2_id": other, "type": "RELATES_TO"}),
                   ("POST", "/api/v1/memory/recall", {"query": "garden gate code"}),
                   # the memory browser's own API, served by the same app
                   ("PATCH", f"/ui/api/memories/{seed_id}", {"content": "PLANTED through the browser API"}),
                   ("POST", "/ui/api/links", {"memory1_id": seed_id, "memory2_id": other, "type": "RELATES_TO"}),
                   ("POST", "/ui/api/supersede", {"memory_id": seed_id, "content": "PLANTED replacement"})]
    plain_routes = [("DELETE", f"/memory/{seed_id}", None), ("DELETE", "/memory/by-tag?tags=seed", None),
                    ("GET", "/recall?query=garden+gate", None), ("GET", f"/memory/{seed_id}", None),
                    ("GET", "/memory/by-tag?tags=seed", None), ("GET", f"/memories/{seed_id}/related", None),
                    ("GET", "/health", None), ("GET", "/ui/api/search?query=garden+gate", None),
                    ("GET", "/ui/api/memories", None), ("GET", f"/ui/api/memories/{seed_id}", None),
                    ("DELETE", f"/ui/api/memories/{seed_id}", None), ("GET", "/ui/", None)]
    fives = 0
    for n in range(420):
        kind = n % 5
        headers: dict[str, str] = {}
        if kind == 0:  # a page of another origin
            method, path, body = rng.choice(body_routes + plain_routes)
            headers["Origin"] = rng.choice(origins)
            if body is not None:
                headers["Content-Type"] = rng.choice(simple_types + ["application/json"])
            expected = {403}
        elif kind == 1:  # a body a page can send without a preflight
            method, path, body = rng.choice(body_routes)
            content_type = rng.choice(simple_types + other_types)
            if content_type is not None:
                headers["Content-Type"] = content_type
            expected = {415}
        elif kind == 2:  # DNS rebinding
            method, path, body = rng.choice(body_routes + plain_routes)
            headers["Host"] = rng.choice(hosts)
            if rng.random() < 0.5:
                headers["Origin"] = f"http://{headers['Host']}"
            if body is not None:
                headers["Content-Type"] = "application/json"
            expected = {421}
        elif kind == 3:  # a browser request that hides its origin
            method, path, body = rng.choice(body_routes + plain_routes)
            headers["Sec-Fetch-Site"] = rng.choice(["cross-site", "same-site", "Cross-Site"])
            if body is not None:
                headers["Content-Type"] = rng.choice(simple_types + ["application/json"])
            expected = {403}
        else:  # a preflight from a foreign origin
            method, path, body = rng.choice(body_routes + plain_routes)
            headers = {"Origin": rng.choice(origins), "Access-Control-Request-Method": method,
                       "Access-Control-Request-Headers": "content-type"}
            method, body, expected = "OPTIONS", None, {403}
        content = json.dumps(body).encode() if body is not None else None
        response = server.request(method, path, content=content, headers=headers)
        if response is None:
            t.attempt(False, f"no answer: {method} {path} {headers}")
            continue
        fives += response.status_code >= 500
        cors = [h for h in response.headers if h.lower().startswith("access-control-allow")]
        ok = response.status_code in expected and "SEED-SECRET" not in response.text and not cors
        t.attempt(ok, f"{method} {path} {headers} -> {response.status_code} {response.text[:120]}",
                  error=response.status_code >= 500)
    # Legitimate clients: no Origin, or the server's own; JSON bodies; loopback Host spellings.
    stored = 0
    for n in range(20):
        headers = rng.choice([{}, {"Origin": server.url}, {"Host": f"localhost:{port}"}, {"Host": f"[::1]:{port}"},
                              {"Content-Type": "application/json; charset=utf-8"}])
        response = server.request("POST", "/memory", content=json.dumps({"content": f"legit {n}"}).encode(),
                                  headers={"Content-Type": "application/json", **headers})
        stored += response is not None and response.status_code == 201
        t.attempt(response is not None and response.status_code == 201, f"legitimate POST {headers} refused")
        recall = server.request("GET", "/recall", params={"query": "garden"}, headers=headers)
        t.attempt(recall is not None and recall.status_code == 200, f"legitimate GET {headers} refused")
    after = snapshot(server.path)
    planted = [m for m in after["memories"].values() if "PLANTED" in m]
    t.attempt(not planted and len(after["memories"]) == len(before["memories"]) + stored,
              f"{len(planted)} planted memories stored")
    t.lose(lost(before, after), "seed memories changed")
    extra, _ = new_errors(server.log, seen)
    t.errors += max(0, extra - fives)
    return t


# -- 3. scoped tokens are recall-only and context-limited -------------------------------------------------


def scoped_routes(ids: tuple[str, str]) -> list[tuple[str, str, dict[str, Any]]]:
    """One request per (route, method) of the app's route table (``tests/test_security.py``), the
    DELETE routes aimed at a real memory of another context."""
    from localmem import MemoryStore
    from localmem.http.app import create_app
    from tests.test_security import MISSING_ID, concrete_requests

    with MemoryStore(":memory:", embedder="hash") as store:
        app = create_app(store, token="x", tokens={"y": ["work"]})
        requests = concrete_requests(app, ids)
    return [(method, path.replace(MISSING_ID, ids[0]), kwargs) for method, path, kwargs in requests]


def item3_scoped_tokens(ctx: Context) -> Tally:
    t = Tally("3. scoped tokens",
              "`agentA` (work), `agentB` (`*`), 8 wrong tokens (prefixes, case, the `agentA=work` and "
              "`agentB=*` entries themselves, `*`, the admin token ± a character) × Bearer / X-API-Key / "
              "`?api_key=` × every (route, method) of the app's route table (API and memory browser), DELETEs aimed at another context's memory; 60 `recall_v1` "
              "calls of `agentA` asking for other contexts (`filters.context_id`, `scope`, case and space "
              "variants); browser sign-in with every non-admin token, guessed login codes and cookies, and the "
              "admin's cookie on every API route")
    server = ctx.scoped
    assert server is not None
    rng = ctx.rng
    seen = tracebacks(server.log.read_text(errors="replace"))
    admin = {"Authorization": f"Bearer {ADMIN}"}
    ids: dict[str, list[str]] = {}
    for context in ("work", "home", "default"):
        for i in range(5):
            response = server.request("POST", "/memory", headers=admin, json={
                "content": f"{context.upper()}-SECRET {i}: the alarm code and vault {words(rng, 3)}",
                "tags": ["alarm", f"ctx:{context}"], "context": context})
            assert response is not None and response.status_code == 201, response and response.text
            ids.setdefault(context, []).append(response.json()["memory_id"])
    before = snapshot(server.path)
    routes = scoped_routes((ids["home"][0], ids["work"][0]))
    wrong = ["agent", "agenta", "AGENTA", "agentA=work", "agentB=*", "*", ADMIN[:-1], ADMIN + "x"]
    tokens = [("agentA", {"work"}), ("agentB", {"work", "home", "default"})] + [(w, None) for w in wrong]
    secrets = {"work": "WORK-SECRET", "home": "HOME-SECRET", "default": "DEFAULT-SECRET"}
    fives = 0
    for token, contexts in tokens:
        for transport in ("bearer", "x-api-key", "query"):
            for method, path, kwargs in routes:
                headers = {"Authorization": f"Bearer {token}"} if transport == "bearer" else (
                    {"X-API-Key": token} if transport == "x-api-key" else {})
                if transport == "query":
                    path = path + ("&" if "?" in path else "?") + f"api_key={quote(token)}"
                response = server.request(method, path, headers=headers, **kwargs)
                note = f"{token!r} via {transport}: {method} {path}"
                if response is None:
                    t.attempt(False, f"{note}: no answer")
                    continue
                fives += response.status_code >= 500
                text = response.text
                base = path.split("?")[0]
                if base in ("/ui", "/ui/login"):  # the redirect and the sign-in form are open by design
                    cookie = "set-cookie" in response.headers
                    ok = (response.status_code == {"/ui": 308, "/ui/login": 200}[base] if method == "GET" else
                          400 <= response.status_code < 500) and not cookie and not any(
                              s in text for s in secrets.values())
                elif base == "/health":
                    leaked = {"path", "file_size_bytes", "memory_count", "edge_count", "vector_count"} & set(
                        response.json())
                    ok = response.status_code == 200 and not leaked
                elif contexts is None and base == "/ui/":  # a page: sends the browser to the sign-in form
                    ok = (response.status_code in (303, 401) and not any(s in text for s in secrets.values())
                          and response.headers.get("location", "/ui/login").startswith("/ui/login"))
                elif contexts is None:
                    ok = response.status_code == 401 and not any(s in text for s in secrets.values())
                elif base == "/api/v1/memory/recall":
                    found = {r.get("context") for r in response.json().get("results", [])}
                    hidden = [s for c, s in secrets.items() if c not in contexts and s in text]
                    ok = response.status_code == 200 and found <= contexts and not hidden
                else:
                    ok = response.status_code == 403 and not any(s in text for s in secrets.values())
                t.attempt(ok, f"{note} -> {response.status_code} {text[:150]}", error=response.status_code >= 500)
    for n in range(60):
        filters = rng.choice([{"context_id": "home"}, {"context_id": "default"}, {"context_id": "HOME"},
                              {"context_id": " home "}, {"context_id": "*"}, {"scope": "home"},
                              {"context_id": "home", "tags": ["alarm"]}, {}])
        response = server.request("POST", "/api/v1/memory/recall", headers={"Authorization": "Bearer agentA"},
                                  json={"query": rng.choice(["home alarm code", "vault", "alarm", words(rng)]),
                                        "k": rng.choice([5, 20, 100]), "filters": filters})
        if response is None:
            t.attempt(False, "recall_v1: no answer")
            continue
        fives += response.status_code >= 500
        found = {r.get("context") for r in response.json().get("results", [])} if response.status_code == 200 else set()
        leak = "HOME-SECRET" in response.text or "DEFAULT-SECRET" in response.text
        # 404: the uniform answer for a context the token may not see (tests/test_recall_v1_http.py).
        t.attempt(response.status_code in (200, 403, 404, 422) and found <= {"work"} and not leak,
                  f"agentA recall_v1 {filters} -> {response.status_code} {sorted(map(str, found))}",
                  error=response.status_code >= 500)
    fives += item3_browser_sessions(server, t, routes, wrong, secrets)
    t.lose(lost(before, snapshot(server.path)), "memories of some context changed")
    extra, _ = new_errors(server.log, seen)
    t.errors += max(0, extra - fives)
    return t


def item3_browser_sessions(server: Server, t: Tally, routes: list[tuple[str, str, dict[str, Any]]],
                           wrong: list[str], secrets: dict[str, str]) -> int:
    """The memory browser's sign-in: no token but the admin one gets a cookie, guessed cookies and
    codes get nothing, and the admin's cookie opens only ``/ui/`` (never the API). Returns the 500s."""
    fives = 0
    for token in ["agentA", "agentB", *wrong, " agentA", ""]:
        response = server.request("POST", "/ui/login", json={"token": token})
        fives += response is not None and response.status_code >= 500
        t.attempt(response is not None and 400 <= response.status_code < 500 and "set-cookie" not in response.headers,
                  f"/ui/login with {token!r} -> {response and response.status_code}",
                  error=response is not None and response.status_code >= 500)
        for code in (token or "x", "0" * 32):
            page = server.request("GET", "/ui/login", params={"code": code})
            t.attempt(page is not None and "set-cookie" not in page.headers, f"/ui/login?code={code!r} signed in")
    signed = server.request("POST", "/ui/login", json={"token": ADMIN})
    cookie = signed.cookies.get("localmem_ui") if signed is not None else None
    t.attempt(bool(cookie), "the admin token could not sign in to the browser")
    for method, path, kwargs in routes:
        base = path.split("?")[0]
        for value in ([cookie] if cookie else []) + ["guessed-session-value"]:
            if base.startswith("/ui") and value == cookie:
                continue  # the admin's cookie is meant to work there
            if base in ("/ui", "/ui/login", "/health"):
                continue
            response = server.request(method, path, headers={"Cookie": f"localmem_ui={value}"}, **kwargs)
            if response is None:
                t.attempt(False, f"cookie on {method} {path}: no answer")
                continue
            fives += response.status_code >= 500
            refused = response.status_code in (401, 403) or (  # the page itself redirects to the sign-in form
                base == "/ui/" and response.status_code == 303
                and response.headers.get("location", "").startswith("/ui/login"))
            t.attempt(refused and not any(s in response.text for s in secrets.values()),
                      f"cookie {'(admin)' if value == cookie else '(guessed)'} on {method} {path} -> "
                      f"{response.status_code} {response.text[:120]}", error=response.status_code >= 500)
    return fives


# -- 4. numerically hostile vectors ----------------------------------------------------------------------


def hostile_vector(rng: random.Random) -> tuple[str, list[float]]:
    """A vector whose float32 cosine cannot be computed stably (the store must refuse it)."""
    kind = rng.choice(["denormal", "tiny", "huge", "overflow", "nan", "inf", "zero", "mixed"])
    if kind == "denormal":
        value = rng.uniform(1e-45, 1.1e-38)
        return kind, [value * rng.choice((1, -1)) for _ in range(DIMS)]
    if kind == "tiny":  # normal float32 values, norm below 1e-6
        scale = 10 ** rng.uniform(-37, -6.05)
        return f"norm {scale:.1e}", [x * scale for x in unit(rng)]
    if kind == "huge":
        scale = 10 ** rng.uniform(6.05, 38)
        return f"norm {scale:.1e}", [x * scale for x in unit(rng)]
    if kind == "overflow":  # beyond float32
        return kind, [x * 10 ** rng.uniform(39.5, 300) for x in unit(rng)]
    vector = unit(rng)
    if kind in ("nan", "inf"):
        for _ in range(rng.randint(1, 5)):
            vector[rng.randrange(DIMS)] = float("nan") if kind == "nan" else rng.choice((1, -1)) * float("inf")
        return kind, vector
    if kind == "zero":
        return kind, [0.0] * DIMS
    vector = [rng.uniform(1e-45, 1e-39) for _ in range(DIMS)]  # mixed: denormals and one 1e-30
    vector[rng.randrange(DIMS)] = 1e-30
    return kind, vector


def plant_vector(path: Path, memory_id: str, values: list[float]) -> None:
    """Overwrite a stored embedding the way an older localmem could have written it."""
    import apsw

    conn = apsw.Connection(str(path))
    try:
        conn.set_busy_timeout(10_000)
        conn.execute("UPDATE memory_embeddings SET embedding = ? WHERE pk = (SELECT pk FROM memories WHERE id = ?)",
                     (array("f", values).tobytes(), memory_id))
    finally:
        conn.close()


def strict_ok(text: str) -> bool:
    try:
        strict_json(text)
        return True
    except ValueError:
        return False


def item4_vectors(ctx: Context) -> Tally:
    t = Tally("4. numerically hostile vectors",
              "denormal, norm < 1e-6 or > 1e6, beyond-float32, NaN, ±inf, zero and mixed vectors stored "
              "(HTTP `POST /memory`, `PATCH`, MCP `store_memory`, `MemoryStore.store` as list / float32 bytes "
              "/ numpy) and as query embeddings (HTTP `/recall?embedding=`, MCP, `MemoryStore.recall`); then "
              "denormal vectors planted on disk and recalled over HTTP (`/recall`, `recall_v1`), MCP "
              "`format=json` and CLI `--json` (strict JSON required); `doctor` must report them and `--repair` "
              "fix them")
    server, mcp = ctx.open, ctx.mcp
    assert server is not None and mcp is not None
    rng = ctx.rng
    seen = tracebacks(server.log.read_text(errors="replace"))
    fives = 0
    ids = []
    for i in range(30):
        response = server.request("POST", "/memory", json={"content": f"vector memory {i} about {words(rng, 4)}",
                                                            "tags": ["vectors"]})
        ids.append(response.json()["memory_id"])
    before = snapshot(server.path)
    # Refused as stored and as query vectors, everywhere.
    for n in range(90):
        label, vector = hostile_vector(rng)
        channel = n % 3
        # json.dumps writes NaN / Infinity as such (httpx's json= refuses to): the server must refuse them.
        if channel == 0:
            body = json.dumps({"content": f"hostile {label}", "embedding": vector}).encode()
            response = server.request("POST", "/memory", content=body, headers=JSON_TYPE)
        elif channel == 1:
            body = json.dumps({"embedding": vector}).encode()
            response = server.request("PATCH", f"/memory/{rng.choice(ids)}", content=body, headers=JSON_TYPE)
        else:
            response = server.request("GET", "/recall", params={"query": "vector memory",
                                                                "embedding": ",".join(map(repr, vector))})
        if response is None:
            t.attempt(False, f"HTTP {label}: no answer")
            continue
        fives += response.status_code >= 500
        t.attempt(response.status_code == 400, f"HTTP channel {channel} {label} -> {response.status_code} "
                  f"{response.text[:150]}", error=response.status_code >= 500)
    for n in range(30):
        label, vector = hostile_vector(rng)
        tool, args = (("store_memory", {"content": f"hostile {label}", "embedding": vector}) if n % 2 == 0 else
                      ("recall_memory", {"query": "vector", "embedding": vector}))
        reply = mcp.call(tool, args)
        t.attempt(mcp_refused(reply), f"MCP {tool} {label}: {tool_text(reply)[:200]}", error=mcp_internal(reply))
    item4_in_process(t, rng)
    # Damaged vectors already on disk never reach a response as NaN or infinity.
    planted = ids[:4]
    for memory_id, values in zip(planted, ([1e-40] * DIMS, [-1e-40] * DIMS, [1e-30] * DIMS, [1e-41] * DIMS)):
        plant_vector(server.path, memory_id, values)
    for n in range(150):
        query = words(rng, rng.randint(1, 3))
        if n % 3 == 2:
            response = server.request("POST", "/api/v1/memory/recall", json={"query": query, "k": rng.choice([5, 30])})
        else:
            response = server.request("GET", "/recall", params={"query": query, "limit": rng.choice([5, 10, 40])})
        if response is None:
            t.attempt(False, f"recall {query!r}: no answer")
            continue
        fives += response.status_code >= 500
        t.attempt(response.status_code == 200 and strict_ok(response.text),
                  f"recall over planted vectors -> {response.status_code} {response.text[:150]}",
                  error=response.status_code >= 500)
    item4_mcp_and_cli(ctx, t, server.path, planted)
    t.lose(lost(before, snapshot(server.path), ignore_embeddings=frozenset(planted)), "memories changed")
    extra, _ = new_errors(server.log, seen)
    t.errors += max(0, extra - fives)
    return t


def item4_in_process(t: Tally, rng: random.Random) -> None:
    import numpy

    from localmem import MemoryStore, ValidationError

    with MemoryStore(":memory:", embedder="hash") as store:
        store.store_many([{"content": f"memory {i} {words(rng, 4)}"} for i in range(10)])
        for n in range(80):
            label, vector = hostile_vector(rng)
            form = n % 3
            with numpy.errstate(over="ignore"):  # values beyond float32 become inf, as a caller's would
                value: Any = vector if form == 0 else (array("f", vector).tobytes() if form == 1 else
                                                      numpy.array(vector, dtype="float32"))
            call = (lambda: store.store(f"hostile {label}", embedding=value)) if n % 2 == 0 else (
                lambda: store.recall("memory", embedding=value))
            try:
                call()
                t.attempt(False, f"MemoryStore accepted {label} (form {form})")
            except ValidationError:
                t.attempt(True)
            except Exception as exc:  # noqa: BLE001 -- anything else is a crash
                t.attempt(False, f"MemoryStore {label}: {type(exc).__name__}: {exc}", error=True)
        count = store.health()["memory_count"]
        t.attempt(count == 10, f"{count - 10} hostile vectors stored in-process")


def item4_mcp_and_cli(ctx: Context, t: Tally, db: Path, planted: list[str]) -> None:
    mcp = ctx.mcp
    assert mcp is not None
    rng = ctx.rng
    mcp_db = ctx.folder / "mcp" / "memory.db"
    targets = []
    for i in range(4):
        reply = mcp.call("store_memory", {"content": f"mcp vector memory {i} about {words(rng, 3)}"})
        targets.append(reply["result"]["structuredContent"]["memory_id"])
    for memory_id in targets:
        plant_vector(mcp_db, memory_id, [1e-40] * DIMS)
    for n in range(30):
        reply = mcp.call("recall_memory", {"query": f"mcp vector {words(rng, 2)}", "format": "json", "limit": 20})
        text = tool_text(reply)
        clean = reply is not None and not mcp_refused(reply) and "Infinity" not in text and "NaN" not in text
        t.attempt(clean, f"MCP format=json: {text[:200]}", error=mcp_internal(reply))
    folder = db.parent
    for n in range(12):
        run = ctx.cli.run("--db", str(db), "--json", "recall", words(rng, 2), "--limit", "20", cwd=folder,
                          kind="item4 recall")
        cli_ok(t, run, False, "CLI --json recall over planted vectors", extra_ok=strict_ok(run.stdout or "x"))
    checked = ctx.cli.run("--db", str(db), "--json", "doctor", cwd=folder, kind="item4 doctor")
    try:
        unusable = {c["name"]: c for c in json.loads(checked.stdout)["checks"]}["embeddings_unusable"]
    except (ValueError, KeyError):
        unusable = {"count": -1, "sample": []}
    t.attempt(checked.code == 1 and unusable["count"] == len(planted),
              f"doctor found {unusable['count']} of {len(planted)} planted vectors", error=checked.crashed)
    repaired = ctx.cli.run("--db", str(db), "--json", "doctor", "--repair", cwd=folder, kind="item4 repair")
    cli_ok(t, repaired, False, "doctor --repair")
    again = ctx.cli.run("--db", str(db), "doctor", cwd=folder, kind="item4 doctor")
    cli_ok(t, again, False, "doctor after --repair")


# -- 5. doctor and restore under a concurrent writer process -------------------------------------------------

WRITER = """
import sys, time
from pathlib import Path
from localmem import MemoryStore
store = MemoryStore(sys.argv[1], embedder="hash")
stop, deadline, i = Path(sys.argv[2]), time.monotonic() + 120, 0
log = open(sys.argv[3], "w")  # a file, not a pipe: a full pipe would stop the writer
while not stop.exists() and time.monotonic() < deadline:
    memory_id = store.store(f"note {i}: the writer keeps committing words like apple{i % 13} pear{i % 7}",
                            tags=[f"t{i % 5}"])
    log.write(memory_id + "\\n")
    log.flush()
    i += 1
store.close()
"""


def start_writer(db: Path, stop: Path) -> subprocess.Popen[bytes]:
    """A process committing one memory after another into ``db``, logging each acknowledged id."""
    return subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(stop), f"{stop}.acks"], env=clean_env())


def stop_writer(process: subprocess.Popen[bytes], stop: Path) -> list[str]:
    """Stop the writer; returns the ids it acknowledged."""
    stop.touch()
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return Path(f"{stop}.acks").read_text().split()


def item5_doctor_under_writer(ctx: Context) -> Tally:
    t = Tally("5. doctor under a concurrent writer",
              "a long-lived store (as a server holds one) runs a full-text recall then `doctor` 60 times while "
              "another process commits; `localmem doctor` 10 times and `localmem restore` 10 times against the "
              "writing process; every acknowledged write must be in the file or in a `pre-restore` copy")
    from localmem import MemoryStore
    from localmem.maintenance import doctor

    rng = ctx.rng
    folder = ctx.dir("item5")
    db = folder / "w.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store_many([{"content": f"seed {i} apple pear {words(rng, 3)}"} for i in range(50)])
    stop = folder / "stop"
    writer = start_writer(db, stop)
    acked: list[str] = []
    saved: list[Path] = []
    try:
        store = MemoryStore(db, embedder="hash")
        try:
            count = store.health()["memory_count"]
            for n in range(60):
                if ctx.out_of_time(t):
                    break
                store.recall(rng.choice(["apple pear", "writer committing", words(rng, 2)]), limit=5)
                deadline = time.monotonic() + 10
                while store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] < count + 5:
                    if time.monotonic() > deadline:
                        raise RuntimeError("the writer process stopped committing")
                    time.sleep(0.005)
                count = store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
                found = [c.as_dict() for c in doctor.problems(doctor.check(store))]
                t.attempt(not found, f"doctor on a long-lived connection: {found}")
        finally:
            store.close()
        for n in range(10):
            if ctx.out_of_time(t):
                break
            run = ctx.cli.run("--db", "w.db", "doctor", cwd=folder, kind="item5 doctor")
            cli_ok(t, run, False, f"localmem doctor under the writer: {run.stdout[-300:]}")
        made = ctx.cli.run("--db", "w.db", "backup", "good.bak", cwd=folder, kind="item5 setup")
        assert made.code == 0, made.stderr
        for n in range(10):
            if ctx.out_of_time(t):
                break
            run = ctx.cli.run("--db", "w.db", "--json", "restore", "good.bak", cwd=folder, kind="item5 restore")
            body = json.loads(run.stdout) if run.code == 0 else {}
            if body.get("saved_previous"):
                saved.append(folder / body["saved_previous"])
            cli_ok(t, run, False, f"restore under the writer: {run.stdout[-300:]}",
                   extra_ok=body.get("problem_count") == 0 and "problem(s) found" not in run.stdout)
            time.sleep(rng.uniform(0.05, 0.3))
    finally:
        acked = stop_writer(writer, stop)
    present = set(snapshot(db)["memories"])
    for copy in saved:
        present |= set(snapshot(copy)["memories"])
    missing = [m for m in acked if m not in present]
    t.lose(len(missing), f"{len(missing)} of {len(acked)} acknowledged writes in neither the file nor a "
                         f"pre-restore copy, e.g. {missing[:2]}")
    return t


# -- 6. MCP: every request gets an answer -------------------------------------------------------------------

RAW_BAD_UTF8 = (b"\xff", b"\xed\xa0\x80", b"\xc0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\x80")


def surrogate_call(rng: random.Random, ids: list[str]) -> tuple[str, dict[str, Any]]:
    """A tools/call whose arguments carry a lone surrogate somewhere."""
    s = lambda text="": with_surrogate(rng, text)  # noqa: E731
    choices: list[tuple[str, dict[str, Any]]] = [
        ("store_memory", {"content": s()}),
        ("store_memory", {"content": "fine", "tags": ["ok", s("tag")]}),
        ("store_memory", {"content": "fine", "metadata": {s("key"): 1}}),
        ("store_memory", {"content": "fine", "metadata": {"k": {"deep": [s("value")]}}}),
        ("store_memory", {"content": "fine", "type": s("Decision")}),
        ("store_memory", {"content": "fine", "timestamp": s("2024-01-01")}),
        ("store_memory", {"memories": [{"content": "fine"}, {"content": s()}]}),
        ("recall_memory", {"query": s()}),
        ("recall_memory", {"queries": ["ok", s()]}),
        ("recall_memory", {"query": "ok", "tags": [s()]}),
        ("recall_memory", {"query": "ok", "time_query": s("last week")}),  # answered either way (see below)
        ("update_memory", {"memory_id": rng.choice(ids), "content": s()}),
        ("update_memory", {"memory_id": rng.choice(ids), "tags": [s()]}),
        ("update_memory", {"memory_id": s(rng.choice(ids))}),
        ("associate_memories", {"memory1_id": rng.choice(ids), "memory2_id": rng.choice(ids), "type": s("RELATES_TO"),
                                "strength": 0.5}),
        ("associate_memories", {"memory1_id": s(rng.choice(ids)), "memory2_id": rng.choice(ids),
                                "type": "RELATES_TO", "strength": 0.5}),
        ("delete_memory", {"memory_id": s(rng.choice(ids))}),
        ("delete_memory", {"tags": [s("keep")]}),
        (s("store_memory"), {"content": "fine"}),
        ("store_memory", {"content": "fine", s("extra"): 1}),
    ]
    return rng.choice(choices)


def item6_mcp_answers(ctx: Context) -> Tally:
    t = Tally("6. MCP requests with lone surrogates",
              "`localmem mcp` on a pipe: 200 `tools/call`s with lone or reversed surrogate escapes in content, "
              "tags, metadata keys and values, type, timestamps, batch items, queries, ids, relation types, tool "
              "and argument names, and 40 with raw invalid UTF-8 (`\\xff`, CESU surrogates, overlong, "
              "truncated); each must be answered within 5 s with an error, a valid call after every tenth")
    mcp = ctx.mcp
    assert mcp is not None
    rng = ctx.rng
    db = ctx.folder / "mcp" / "memory.db"
    ids = []
    for i in range(5):
        reply = mcp.call("store_memory", {"content": f"mcp keeper {i} {words(rng, 3)}", "tags": ["keep"]})
        ids.append(reply["result"]["structuredContent"]["memory_id"])
    before = snapshot(db)
    controls = 0
    for n in range(200):
        if ctx.out_of_time(t):
            break
        name, args = surrogate_call(rng, ids)
        started = time.monotonic()
        reply = mcp.call(name, args, timeout=5)
        if reply is None:
            t.attempt(False, f"no answer to {name}({json.dumps(args)[:150]}) within 5 s")
            continue
        # A time expression is not stored: one it cannot read is ignored, as any unknown phrase is
        # (what recall does with unreadable time expressions is issue 13's); it must be answered.
        answered = "time_query" in args or mcp_refused(reply)
        t.attempt(answered and time.monotonic() - started < 5,
                  f"{name}({json.dumps(args)[:150]}) accepted: {tool_text(reply)[:150]}", error=mcp_internal(reply))
        if n % 10 == 9:
            reply = mcp.call("store_memory", {"content": f"valid call {n}"})
            controls += 1
            t.attempt(reply is not None and not mcp_refused(reply), f"valid call after attacks: {tool_text(reply)}")
    for n in range(40):
        bad = rng.choice(RAW_BAD_UTF8)
        name, argument = rng.choice([(b"store_memory", b'{"content":"x%sy"}'), (b"recall_memory", b'{"query":"%s"}'),
                                     (b"store_memory", b'{"content":"ok","tags":["%s"]}'),
                                     (b"store_memory%s", b'{"content":"ok"}')])
        if ctx.out_of_time(t):
            break
        reply = mcp.call_raw(name.replace(b"%s", bad), argument.replace(b"%s", bad), timeout=5)
        t.attempt(mcp_refused(reply), f"raw {bad!r} in {name!r}: {json.dumps(reply)[:150]}", error=mcp_internal(reply))
    after = snapshot(db)
    t.attempt(len(after["memories"]) == len(before["memories"]) + controls,
              f"{len(after['memories']) - len(before['memories']) - controls} memories stored by the attacks")
    t.lose(lost(before, after), "memories changed")
    return t


# -- 7. 500s and tracebacks where a 400 belongs ---------------------------------------------------------------


def nested_metadata(depth: int) -> bytes:
    return b'{"content": "deep", "metadata": ' + b'{"a": ' * depth + b"1" + b"}" * depth + b"}"


def item7_bad_values(ctx: Context) -> Tally:
    t = Tally("7. values that were 500s and tracebacks",
              "lone surrogates in `recall_v1` filters (tags, type, context_id, scope, tag_mode); `last <N digits> "
              "days` (N up to 5000) over HTTP, MCP and CLI; bodies that are N-digit integers, N-digit and 2^64 "
              "fields, 1e999, nesting 65–200,000 deep, field names with lone surrogates; MCP metadata nested "
              "deep; CLI `store --metadata` nested deep and `import` of a line nested 100,000 deep")
    server, mcp = ctx.open, ctx.mcp
    assert server is not None and mcp is not None
    rng = ctx.rng
    seen = tracebacks(server.log.read_text(errors="replace"))
    before = snapshot(server.path)
    fives = 0

    def http(method: str, path: str, expected: set[int], note: str, **kwargs: Any) -> None:
        nonlocal fives
        response = server.request(method, path, **kwargs)
        if response is None:
            t.attempt(False, f"{note}: no answer")
            return
        fives += response.status_code >= 500
        t.attempt(response.status_code in expected and strict_ok(response.text),
                  f"{note} -> {response.status_code} {response.text[:150]}", error=response.status_code >= 500)

    json_type = {"Content-Type": "application/json"}
    for n in range(40):
        field = rng.choice(["tags", "type", "context_id", "scope", "tag_mode"])
        value = with_surrogate(rng, "alpha")
        escaped = json.dumps(value)  # "\ud800" escapes: valid JSON text, an invalid string
        filters = f'"{field}": [{escaped}]' if field in ("tags", "type") else f'"{field}": {escaped}'
        body = ('{"query": "memory", "filters": {%s}}' % filters).encode()
        http("POST", "/api/v1/memory/recall", {422}, f"recall_v1 filters.{field}={escaped}", content=body,
             headers=json_type)
    for n in range(40):
        digits = rng.choice(["9", "1", "0"]) * rng.randint(20, 5000)
        expression = rng.choice([f"last {digits} days", f"last {digits} hours", f"{digits} days ago",
                                 f"last {digits} weeks", f"past {digits} years"])
        http("GET", "/recall", {200, 400}, f"time_query {expression[:30]}… ({len(digits)} digits)",
             params={"query": "memory", "time_query": expression})
    bodies: list[tuple[str, bytes]] = []
    for n in range(50):
        kind = n % 6
        if kind == 0:
            bodies.append(("N-digit body", b"1" * rng.randint(20, 20_000)))
        elif kind == 1:
            bodies.append(("N-digit field", b'{"content": "x", "importance": ' + b"9" * rng.randint(20, 20_000) + b"}"))
        elif kind == 2:
            bodies.append(("2^64 field", b'{"content": "x", "importance": %d}' % (2 ** rng.randint(64, 400))))
        elif kind == 3:
            bodies.append(("1e999", b'{"content": %s}' % rng.choice([b"1e999", b"-1e999", b"1e400"])))
        elif kind == 4:
            bodies.append(("brackets", b"[" * rng.choice([65, 1000, 100_000, 200_000])))
        else:
            bodies.append(("deep metadata", nested_metadata(rng.choice([65, 100, 5000, 100_000]))))
    for n in range(30):  # a field *name* with a lone surrogate, echoed in the error
        key = json.dumps(with_surrogate(rng, rng.choice(["query", "extra", "content", "x"])))
        body = rng.choice(['{%s: null}', '{"query": "x", "content": "x", %s: 1}', '{"query": "x", "filters": {%s: 1}}',
                           '{"memories": [{"content": "x", %s: 1}]}']) % key
        bodies.append(("surrogate field name", body.encode()))
    for label, body in bodies:
        path = rng.choice(["/memory", "/api/v1/memory/recall", "/memory/batch"])
        expected = {422} if path.startswith("/api/") else {400}
        http("POST", path, expected, f"{label} ({len(body)} bytes) to {path}", content=body, headers=json_type)
    for n in range(30):
        if n % 2 == 0:
            digits = "9" * rng.randint(20, 20_000)
            reply = mcp.call("recall_memory", {"query": "memory", "time_query": f"last {digits} days"})
            t.attempt(reply is not None, "MCP huge time_query: no answer", error=mcp_internal(reply))
        else:
            depth = rng.choice([65, 200, 1000, 5000])
            meta: Any = 1
            for _ in range(depth):
                meta = {"a": meta}
            try:
                reply = mcp.call("store_memory", {"content": "deep via mcp", "metadata": meta})
            except RecursionError:  # the harness's own json.dumps; send the text instead
                reply = mcp.call_raw(b"store_memory", b'{"content":"deep via mcp","metadata":' + b'{"a":' * depth
                                     + b"1" + b"}" * depth + b"}")
            t.attempt(mcp_refused(reply), f"MCP metadata nested {depth}: {tool_text(reply)[:150]}",
                      error=mcp_internal(reply))
    item7_cli(ctx, t)
    after = snapshot(server.path)
    t.attempt(not any('"deep"' in m for m in after["memories"].values()), "deep metadata stored over HTTP")
    t.lose(lost(before, after), "memories changed")
    extra, _ = new_errors(server.log, seen)
    t.errors += max(0, extra - fives)
    return t


def item7_cli(ctx: Context, t: Tally) -> None:
    rng = ctx.rng
    folder = ctx.dir("item7")
    db = folder / "m.db"
    made = ctx.cli.run("--db", str(db), "--embedder", "hash", "store", "the first memory", cwd=folder, kind="item7 setup")
    assert made.code == 0, made.stderr
    before = snapshot(db)
    for n in range(6):
        digits = "9" * rng.randint(20, 20_000)
        run = ctx.cli.run("--db", str(db), "recall", "memory", "--time-query", f"last {digits} days", cwd=folder,
                          kind="item7 time")
        cli_ok(t, run, False, f"CLI --time-query with {len(digits)} digits")
    for n in range(6):
        opener = rng.choice(["[", '{"a":'])
        # An argument is at most 128 KiB (MAX_ARG_STRLEN).
        depth = rng.choice([65, 1000, 20_000] + ([100_000] if opener == "[" else []))
        run = ctx.cli.run("--db", str(db), "store", "deep metadata", "--metadata", opener * depth, cwd=folder,
                          kind="item7 metadata")
        cli_ok(t, run, True, f"CLI store --metadata nested {depth}",
               extra_ok=run.code == 2 and "nested deeper than" in run.stderr)
    for n in range(6):
        depth = rng.choice([1000, 100_000])
        line_no = rng.randint(1, 4)
        lines = [json.dumps({"kind": "memory", "content": f"fine {i}"}) for i in range(line_no - 1)]
        lines.append('{"kind": "memory", "content": "deep", "metadata": ' + '{"a": ' * depth + "1" + "}" * (depth + 1))
        source = folder / f"deep-{n}.jsonl"
        source.write_text("\n".join(lines) + "\n", encoding="utf-8")
        run = ctx.cli.run("--db", str(db), "import", str(source), cwd=folder, kind="item7 import")
        cli_ok(t, run, True, f"CLI import of a line nested {depth}",
               extra_ok=run.code == 2 and f"line {line_no}:" in run.stderr)
    t.lose(lost(before, snapshot(db)), "CLI database changed")
    t.attempt(count_memories(db) == 1, "a CLI attack stored something")


# -- 8. imports change no existing data ---------------------------------------------------------------------

A, B, C, D, E = (f"3f2504e0-4f89-41d3-9a0c-0305e82c330{i}" for i in range(1, 6))
MISSING = "00000000-0000-4000-8000-000000000000"


def import_seed(path: Path) -> None:
    from localmem import MemoryStore

    with MemoryStore(path, embedder="hash") as store:
        for memory_id, text in ((A, "alpha is the chosen queue"), (B, "beta is the other queue"),
                                (C, "gamma runs the nightly jobs"), (D, "delta holds the archive"),
                                (E, "epsilon is retired")):
            store.store(text, id=memory_id, importance=0.7)
        store.associate(A, B, "PREFERS_OVER", 0.9, reason="speed")
        store.associate(B, C, "RELATES_TO", 0.5)
        store.associate(C, D, "LEADS_TO", 0.7)


def import_file(rng: random.Random) -> tuple[list[str], bool, bool, list[int]]:
    """Random import lines; returns (lines, has_invalid, touches_existing, indexes of bad lines)."""
    new_ids = [str(uuid.uuid4()) for _ in range(3)]
    parts: list[tuple[str, dict[str, Any]]] = []
    for memory_id in new_ids[:rng.randint(1, 3)]:
        parts.append(("good", {"kind": "memory", "id": memory_id, "content": f"new memory {words(rng, 3)}"}))
    made = [p[1]["id"] for p in parts]
    if len(made) >= 2:
        parts.append(("good", {"kind": "edge", "memory1_id": made[0], "memory2_id": made[1],
                               "relation_type": "RELATES_TO", "strength": 0.4}))
    hostile = [
        ("existing", lambda: {"kind": "memory", "id": rng.choice([A, B, C]), "content": "REWRITTEN by an import",
                              "importance": 0.01}),
        ("existing", lambda: {"kind": "edge", "memory1_id": A, "memory2_id": B, "relation_type": "PREFERS_OVER",
                              "strength": 0.01, "properties": {"reason": "other"}}),
        ("existing", lambda: {"kind": "edge", "memory1_id": B, "memory2_id": C, "relation_type": "relates_to",
                              "strength": 0.99}),
        ("invalid", lambda: {"kind": "edge", "memory1_id": (x := rng.choice([A, D] + made)), "memory2_id": x,
                             "relation_type": "RELATES_TO"}),
        ("invalid", lambda: {"kind": "edge", "memory1_id": rng.choice([A] + made), "memory2_id": MISSING,
                             "relation_type": "RELATES_TO"}),
        ("invalid", lambda: {"kind": "edge", "memory1_id": A, "memory2_id": D, "relation_type": "NOT_A_RELATION"}),
        ("invalid", lambda: {"kind": "edge", "memory1_id": A, "memory2_id": D, "relation_type": "RELATES_TO",
                             "strength": rng.choice([1.5, -0.2, "high"])}),
        ("invalid", lambda: {"kind": "memory", "content": "bad importance", "importance": rng.choice([7, "high", -1])}),
        ("invalid", lambda: {"kind": "edge", "memory1_id": A, "memory2_id": B, "relation_type": "PREFERS_OVER",
                             "properties": {"colour": "red"}}),
    ]
    for kind, make in rng.sample(hostile, rng.randint(1, 3)):  # each once: a repeated line is a duplicate
        parts.insert(rng.randint(0, len(parts)), (kind, make()))
    # Edges between this file's new memories must come after those memories.
    order = {p[1].get("id"): i for i, p in enumerate(parts) if p[1]["kind"] == "memory" and p[0] == "good"}
    parts.sort(key=lambda p: max(order.get(p[1].get("memory1_id"), -1), order.get(p[1].get("memory2_id"), -1)) + 0.5
               if p[1]["kind"] == "edge" else order.get(p[1].get("id"), -1))
    lines = [json.dumps(p[1]) for p in parts]
    bad = [i for i, p in enumerate(parts) if p[0] == "invalid"]
    return lines, bool(bad), any(p[0] == "existing" for p in parts), bad


def item8_imports(ctx: Context) -> Tally:
    t = Tally("8. imports",
              "150 random import files mixing new memories and edges with lines that rewrite existing memories "
              "and edges (strength 0.9 → 0.01, properties), self-edges, edges to missing memories, unknown "
              "relation types, bad strengths, importances and properties, in any order; default and "
              "`--skip-existing`; `import_jsonl` in-process and `localmem import`; each refused file then "
              "re-run without its bad lines")
    from localmem import MemoryStore, ValidationError
    from localmem.maintenance.importer import import_jsonl

    rng = ctx.rng
    folder = ctx.dir("item8")
    seed = folder / "seed.db"
    import_seed(seed)
    for n in range(150):
        if ctx.out_of_time(t):
            break
        lines, invalid, existing, bad = import_file(rng)
        skip = rng.random() < 0.5
        db = folder / "attempt.db"
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(seed, db)
        before = snapshot(db)
        refused_expected = invalid or (existing and not skip)
        via_cli = n % 5 == 0
        if via_cli:
            source = folder / "in.jsonl"
            source.write_text("\n".join(lines) + "\n", encoding="utf-8")
            argv = ["--db", str(db), "--embedder", "hash", "import", str(source)] + (["--skip-existing"] if skip else [])
            run = ctx.cli.run(*argv, cwd=folder, kind="item8 import")
            refused, error = run.code == 2 and "line " in run.stderr, run.crashed
            note = f"localmem import (skip={skip}): exit {run.code} {run.stderr[:200]}"
        else:
            error, note = False, ""
            with MemoryStore(db, embedder="hash") as store:
                try:
                    import_jsonl(store, lines, skip_existing=skip)
                    refused = False
                except ValidationError as exc:
                    refused = True
                    note = str(exc)[:200]
                except Exception as exc:  # noqa: BLE001
                    refused, error, note = True, True, f"{type(exc).__name__}: {exc}"
        after = snapshot(db)
        self_edges = sum(1 for (src, _, dst) in after["edges"] if src == dst)
        unchanged = after == before
        ok = refused == refused_expected and self_edges == 0 and (unchanged if refused else True)
        t.attempt(ok, f"file {lines} skip={skip}: refused={refused} (expected {refused_expected}), "
                      f"self-edges {self_edges}, unchanged {unchanged}; {note}", error=error)
        t.lose(lost(before, after), f"existing rows changed by {lines}")
        if refused and invalid and not error:  # the same file without its bad lines now imports
            fixed = [line for i, line in enumerate(lines) if i not in bad]
            with MemoryStore(db, embedder="hash") as store:
                try:
                    import_jsonl(store, fixed, skip_existing=True)
                    t.attempt(True)
                except Exception as exc:  # noqa: BLE001
                    t.attempt(False, f"re-run without the bad lines failed: {exc}")
            t.lose(lost(before, snapshot(db)), "existing rows changed by the re-run")
    return t


# -- 9. read-only media ----------------------------------------------------------------------------------------


class Media:
    """A tmpfs mounted for the run; ``seal()`` remounts it read-only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", str(path)],
                              capture_output=True, text=True, check=False)
        if made.returncode != 0:
            raise OSError(made.stderr.strip() or "mount failed")
        self.mounted = True

    def seal(self) -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True, capture_output=True)
        try:
            (self.path / "probe").write_text("x")
        except OSError:
            return
        raise OSError("the remounted tmpfs is still writable")

    def close(self) -> None:
        if self.mounted and subprocess.run(["umount", str(self.path)], capture_output=True).returncode:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
        self.mounted = False


def item9_read_only(ctx: Context) -> Tally:
    t = Tally("9. read-only media",
              "a tmpfs remounted read-only: `stats`, `recall`, `get`, `by-tag`, `export`, `doctor`, `backup` "
              "(half with `LOCALMEM_TRACK_ACCESS=0`) must work and agree with the data; `store`, `delete`, "
              "`update`, `associate`, `import`, `doctor --repair` must fail saying read-only; "
              "`MemoryStore(path, read_only=True)` reads and refuses writes")
    from localmem import ConfigError, MemoryStore, StorageError

    rng = ctx.rng
    folder = ctx.dir("item9")
    try:
        media = Media(folder / "media")
    except OSError as exc:
        t.skipped = f"cannot mount a tmpfs: {exc}"
        return t
    try:
        db = media.path / "memory.db"
        with MemoryStore(db, embedder="hash") as store:
            ids = store.store_many([{"content": f"read-only memory {i} about {words(rng, 4)}",
                                     "tags": [f"shelf:{i % 3}"]} for i in range(40)])
            for i in range(10):
                store.associate(ids[i], ids[i + 20], "RELATES_TO", 0.5)
        before = snapshot_read_only(db)  # a connection here would leave a -wal and -shm behind
        media.seal()
        (folder / "import.jsonl").write_text(json.dumps({"kind": "memory", "content": "imported"}) + "\n")
        out = ctx.dir("item9/out")
        for n in range(96):
            if ctx.out_of_time(t):
                break
            env = clean_env(LOCALMEM_TRACK_ACCESS="0") if n % 2 else clean_env()
            command = n % 8
            if command == 0:
                run = ctx.cli.run("--db", str(db), "--json", "stats", cwd=folder, env=env, kind="item9 read")
                good = run.code == 0 and json.loads(run.stdout)["memory_count"] == 40
            elif command == 1:
                run = ctx.cli.run("--db", str(db), "--json", "recall", words(rng, 2), "--limit", "10", cwd=folder,
                                  env=env, kind="item9 read")
                good = run.code == 0 and bool(json.loads(run.stdout)["results"])
            elif command == 2:
                memory_id = rng.choice(ids)
                run = ctx.cli.run("--db", str(db), "--json", "get", memory_id, cwd=folder, env=env, kind="item9 read")
                good = run.code == 0 and memory_id in run.stdout
            elif command == 3:
                run = ctx.cli.run("--db", str(db), "--json", "by-tag", "shelf:1", cwd=folder, env=env, kind="item9 read")
                good = run.code == 0
            elif command == 4:
                target = out / f"e{n}.jsonl"
                run = ctx.cli.run("--db", str(db), "export", str(target), cwd=folder, env=env, kind="item9 read")
                kinds = [json.loads(x)["kind"] for x in target.read_text().splitlines()] if run.code == 0 else []
                good = kinds.count("memory") == 40 and kinds.count("edge") == 10
            elif command == 5:
                run = ctx.cli.run("--db", str(db), "doctor", cwd=folder, env=env, kind="item9 read")
                good = run.code == 0
            elif command == 6:
                target = out / f"b{n}.db"
                run = ctx.cli.run("--db", str(db), "backup", str(target), cwd=folder, env=env, kind="item9 read")
                good = run.code == 0 and lost(before, snapshot(target)) == 0
            else:
                writes = [["store", "a new memory"], ["delete", rng.choice(ids)], ["update", rng.choice(ids),
                          "--importance", "0.9"], ["associate", ids[30], ids[31]],
                          ["import", str(folder / "import.jsonl")], ["doctor", "--repair"]]
                argv = rng.choice(writes)
                run = ctx.cli.run("--db", str(db), *argv, cwd=folder, env=env, kind="item9 write")
                good = run.code == 1 and run.stderr.startswith("error: ") and "read-only" in run.stderr
            t.attempt(good and not run.hung, f"command {command}: exit {run.code} {run.stderr[:200]}",
                      error=run.crashed)
        for n in range(30):
            try:
                with MemoryStore(db, embedder="hash", read_only=True) as store:
                    if n % 3 == 0:
                        try:
                            rng.choice([lambda: store.store("x"), lambda: store.delete(ids[0]),
                                        lambda: store.update(ids[1], importance=0.1)])()
                            t.attempt(False, "a write succeeded on read-only media")
                        except StorageError as exc:
                            t.attempt("read-only" in exc.message, exc.message)
                    else:
                        good = (store.recall(words(rng, 2), limit=5)["count"] >= 1
                                and store.get(rng.choice(ids))["id"] in ids and store.health()["memory_count"] == 40)
                        t.attempt(good, "read-only reads")
            except Exception as exc:  # noqa: BLE001
                t.attempt(False, f"MemoryStore(read_only=True): {type(exc).__name__}: {exc}", error=True)
        try:
            MemoryStore(db, embedder="hash")
            t.attempt(False, "a writable open of read-only media did not fail")
        except ConfigError as exc:
            t.attempt("read_only=True" in exc.message, exc.message)
        t.lose(lost(before, snapshot_read_only(db)), "the read-only file's data")
    finally:
        media.close()
    return t


def snapshot_read_only(db: Path) -> dict[str, dict[Any, str]]:
    """A snapshot through a copy: a connection on the media would leave a -wal and -shm there
    (or, once sealed, could not make them)."""
    copy = db.parent.parent / "ro-copy.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{copy}{suffix}").unlink(missing_ok=True)
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{db}{suffix}")
        if source.exists():
            shutil.copyfile(source, f"{copy}{suffix}")
    return snapshot(copy)


# -- 10. private files under umask 000 ------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def item10_permissions(ctx: Context) -> Tally:
    t = Tally("10. file modes under a permissive umask",
              "under umask 000 / 002 / 020: `export` and `backup` into new nested directories, `store` into a "
              "new database in new directories and into an existing empty 0666 file, `import` into a new "
              "database, `restore`'s saved copy; a `MemoryStore` held open (its -wal/-shm); every created "
              "file must be 0600 and every created directory 0700")
    from localmem import MemoryStore

    rng = ctx.rng
    folder = ctx.dir("item10")
    base = folder / "w.db"
    with MemoryStore(base, embedder="hash") as store:
        store.store_many([{"content": f"private memory {i}"} for i in range(5)])
    dump = folder / "dump.jsonl"
    ctx.cli.run("--db", str(base), "export", str(dump), cwd=folder, kind="item10 setup")
    for n in range(60):
        if ctx.out_of_time(t):
            break
        umask = rng.choice([0o000, 0o000, 0o002, 0o020])
        depth = rng.randint(1, 3)
        new_dir = folder / f"n{n}" / Path(*[f"d{i}" for i in range(depth)])
        created = [folder / f"n{n}" / Path(*[f"d{i}" for i in range(k)]) for k in range(depth + 1)]
        command = n % 6
        if command == 0:
            target = new_dir / "e.jsonl"
            run = ctx.cli.run("--db", str(base), "export", str(target), cwd=folder, umask=umask, kind="item10 export")
            files = [target]
        elif command == 1:
            target = new_dir / "b.db"
            run = ctx.cli.run("--db", str(base), "backup", str(target), cwd=folder, umask=umask, kind="item10 backup")
            files = [target]
        elif command == 2:
            target = new_dir / "m.db"
            run = ctx.cli.run("--db", str(target), "--embedder", "hash", "store", "x", cwd=folder, umask=umask,
                              kind="item10 store")
            files = [target]
        elif command == 3:
            created = []
            target = folder / f"empty{n}.db"
            previous = os.umask(0)
            try:
                target.touch(mode=0o666)
            finally:
                os.umask(previous)
            run = ctx.cli.run("--db", str(target), "--embedder", "hash", "store", "x", cwd=folder, umask=umask,
                              kind="item10 empty")
            files = [target]
        elif command == 4:
            target = new_dir / "i.db"
            run = ctx.cli.run("--db", str(target), "--embedder", "hash", "import", str(dump), cwd=folder,
                              umask=umask, kind="item10 import")
            files = [target]
        else:
            created = []
            copy = folder / f"r{n}.db"
            shutil.copyfile(base, copy)
            os.chmod(copy, 0o600)
            backup = folder / "restore-source.db"
            if not backup.exists():
                ctx.cli.run("--db", str(base), "backup", str(backup), cwd=folder, kind="item10 setup")
            run = ctx.cli.run("--db", str(copy), "--json", "restore", str(backup), cwd=folder, umask=umask,
                              kind="item10 restore")
            files = [folder / json.loads(run.stdout)["saved_previous"]] if run.code == 0 else []
        wrong = [f"{p.name} {mode(p):o}" for p in files if p.exists() and mode(p) != 0o600]
        wrong += [f"{p.name}/ {mode(p):o}" for p in created[1:] if p.exists() and mode(p) != 0o700]
        wrong += [f"{p.name} missing" for p in files if not p.exists()]
        cli_ok(t, run, False, f"umask {umask:03o} command {command}: {wrong}", extra_ok=not wrong)
    for n in range(6):  # a store held open: the -wal and -shm exist now
        umask = rng.choice([0o000, 0o002])
        path = folder / f"held{n}" / "m.db"
        previous = os.umask(umask)
        try:
            if n % 2:
                path.parent.mkdir(mode=0o777)
                path.touch(mode=0o666)
            with MemoryStore(path, embedder="hash") as store:
                store.store("held open")
                modes = {p.name: mode(p) for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm"))}
        finally:
            os.umask(previous)
        t.attempt(set(modes.values()) == {0o600}, f"held store under umask {umask:03o}: {modes}")
    return t


# -- 11. smaller: leftovers, collisions, long errors, foreign files, fsync, /health, slow clients ----------------


def tmp_leftovers(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith(".tmp"))


def item11_smaller(ctx: Context) -> Tally:
    t = Tally("11. leftovers, collisions, errors, foreign files, /health, slow clients",
              "failed backups (a text file, a foreign SQLite file, a missing file as source; a directory, a "
              "path under a file, read-only media as destination, with and without `--force`); pairs of "
              "restores in the same second; damaged backups; a foreign SQLite file through 8 commands; `export` "
              "fsyncs; `/health` per caller; 40 slow-header and 10 idle connections")
    rng = ctx.rng
    folder = ctx.dir("item11")
    from localmem import MemoryStore

    with MemoryStore(folder / "w.db", embedder="hash") as store:
        store.store_many([{"content": f"memory {i} with some words {words(rng, 5)}"} for i in range(300)])
    (folder / "notes.txt").write_text("not a database\n")
    (folder / "adir").mkdir()
    (folder / "afile").write_text("a file")
    import apsw

    conn = apsw.Connection(str(folder / "foreign.db"))
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices (total) VALUES (9.5)")
    conn.close()
    foreign_bytes = (folder / "foreign.db").read_bytes()
    item11_failed_backups(ctx, t, folder)
    item11_restores(ctx, t, folder)
    item11_foreign(ctx, t, folder, foreign_bytes)
    for n in range(5):
        target = folder / f"exports{n}" / "e.jsonl"
        run = ctx.cli.run("--db", "w.db", "export", str(target), cwd=folder, trace_fsync=True, kind="item11 fsync")
        data = any(Path(p).name.startswith(".e.jsonl.") for p in run.fsynced)
        cli_ok(t, run, False, f"export fsyncs {run.fsynced}", extra_ok=data and str(target.parent) in run.fsynced)
    item11_health(ctx, t)
    item11_slow_clients(ctx, t)
    return t


def item11_failed_backups(ctx: Context, t: Tally, folder: Path) -> None:
    media = None
    try:
        media = Media(folder / "ro")
        media.seal()
    except (OSError, subprocess.CalledProcessError):
        media = None
    cases = [("notes.txt", "out.db"), ("foreign.db", "out.db"), ("missing.db", "out.db"), ("w.db", "adir"),
             ("w.db", "afile/x.db"), ("w.db", "adir/")]
    if media is not None:
        cases.append(("w.db", str(media.path / "copy.db")))
    try:
        for n in range(24):
            source, dest = rng_choice(ctx.rng, cases)
            force = ["--force"] if n % 2 else []
            run = ctx.cli.run("--db", source, "backup", dest, *force, cwd=folder, kind="item11 backup")
            lines = len(run.stderr.strip().splitlines())
            left = tmp_leftovers(folder)
            good = run.refused and lines <= 3 and ".tmp" not in run.stderr and not left and not (
                folder / "out.db").exists() and not list((folder / "adir").iterdir())
            t.attempt(good, f"backup {source} -> {dest} {force}: exit {run.code}, {lines} lines, leftovers {left}: "
                            f"{run.stderr[:200]}", error=run.crashed)
    finally:
        if media is not None:
            media.close()


def rng_choice(rng: random.Random, items: list[Any]) -> Any:
    return items[rng.randrange(len(items))]


def item11_restores(ctx: Context, t: Tally, folder: Path) -> None:
    made = ctx.cli.run("--db", "w.db", "backup", "good.bak", cwd=folder, kind="item11 setup")
    assert made.code == 0, made.stderr
    saved: list[str] = []
    for n in range(5):  # two restores as fast as they can run: the same second, mostly
        pair = [ctx.cli.run("--db", "w.db", "--json", "restore", "good.bak", cwd=folder, kind="item11 restore")
                for _ in range(2)]
        names = [json.loads(r.stdout).get("saved_previous") if r.code == 0 else None for r in pair]
        for run, name in zip(pair, names):
            cli_ok(t, run, False, f"restore in the same second: {run.stderr[:200]}",
                   extra_ok=bool(name) and name not in saved)
            saved.append(str(name))
    t.attempt(all((folder / s).is_file() for s in saved), "a pre-restore copy was overwritten or lost")
    good = (folder / "good.bak").read_bytes()
    for n in range(6):
        data = bytearray(good)
        damage = n % 3
        if damage == 0:  # scribble over every other page's cells
            for page in range(2, len(data) // 8192, 2):
                data[page * 8192 + 100:page * 8192 + 4000] = bytes([ctx.rng.randrange(256)]) * 3900
        elif damage == 1:
            data = data[: len(data) // 2]
        else:
            data[ctx.rng.randrange(100, 200)] ^= 0xFF
            for page in range(1, len(data) // 8192):
                data[page * 8192 + ctx.rng.randrange(8, 8192)] ^= 0x55
        (folder / "bad.bak").write_bytes(bytes(data))
        before = (folder / "w.db").read_bytes()
        run = ctx.cli.run("--db", "w.db", "restore", "bad.bak", cwd=folder, kind="item11 damaged")
        lines = len(run.stderr.strip().splitlines())
        unchanged = (folder / "w.db").read_bytes() == before
        if run.code == 0:  # a change SQLite cannot see is no damage: then it must be a good restore
            t.attempt(True)
            continue
        t.attempt(run.refused and lines <= 3 and unchanged, f"damaged backup ({damage}): {lines} lines, "
                  f"unchanged {unchanged}: {run.stderr[:200]}", error=run.crashed)


def item11_foreign(ctx: Context, t: Tally, folder: Path, foreign_bytes: bytes) -> None:
    before = sorted(p.name for p in folder.iterdir())
    commands = [["stats"], ["backup", "f.bak"], ["store", "x"], ["recall", "x"], ["export", "f.jsonl"], ["doctor"],
                ["import", "notes.txt"], ["restore", "good.bak"]]
    for n in range(16):
        argv = commands[n % len(commands)]
        run = ctx.cli.run("--db", "foreign.db", *argv, cwd=folder, kind="item11 foreign")
        untouched = (folder / "foreign.db").read_bytes() == foreign_bytes
        new_files = sorted(set(p.name for p in folder.iterdir()) - set(before))
        cli_ok(t, run, True, f"foreign file {argv}: untouched {untouched}, new files {new_files}",
               extra_ok=untouched and not new_files and "localmem" in run.stderr)


def item11_health(ctx: Context, t: Tally) -> None:
    server = ctx.scoped
    assert server is not None
    minimal = {"status", "service", "version", "timestamp"}
    private = {"path", "file_size_bytes", "memory_count", "vector_count", "edge_count", "fts_count", "tag_count"}
    for n in range(30):
        who = n % 5
        headers = [{}, {"Authorization": "Bearer wrong"}, {"X-API-Key": "agentA"}, {"Authorization": "Bearer agentB"},
                   {"Authorization": f"Bearer {ADMIN}"}][who]
        response = server.request("GET", "/health", headers=headers)
        body = response.json() if response is not None and response.status_code == 200 else {}
        if who < 2:
            good = set(body) == minimal
        elif who < 4:
            good = bool(body) and not private & set(body) and str(server.path.parent) not in response.text
        else:
            good = body.get("path") == str(server.path) and body.get("memory_count", -1) >= 0
        t.attempt(good, f"/health for caller {who}: {sorted(body)}")


def item11_slow_clients(ctx: Context, t: Tally) -> None:
    server = ctx.open
    assert server is not None
    port = server.port

    def connect(first: bytes) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        if first:
            sock.sendall(first)
        sock.setblocking(False)
        return sock

    slow = [connect(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n") for _ in range(40)]
    idle = [connect(b"") for _ in range(10)]
    statuses: list[int] = []

    def steady() -> None:
        import httpx

        with httpx.Client(base_url=server.url, timeout=5) as client:
            for _ in range(8):
                try:
                    statuses.append(client.get("/health").status_code)
                except httpx.HTTPError:
                    statuses.append(0)
                time.sleep(1)

    worker = threading.Thread(target=steady)
    worker.start()
    start = time.monotonic()
    open_socks = {i: s for i, s in enumerate(slow + idle)}
    closed: dict[int, tuple[float, bytes]] = {}
    received = {i: b"" for i in open_socks}
    while open_socks and time.monotonic() - start < 15:
        for index, sock in list(open_socks.items()):
            try:
                data = sock.recv(65536)
                if data:
                    received[index] += data
                    continue
            except BlockingIOError:
                if index < 40:
                    try:
                        sock.sendall(b"X-Slow: 1\r\n")
                    except OSError:
                        pass
                continue
            except OSError:
                pass
            closed[index] = (time.monotonic() - start, received[index])
            sock.close()
            del open_socks[index]
        time.sleep(0.5)
    for sock in open_socks.values():
        sock.close()
    worker.join(20)
    for index in range(50):
        if index not in closed:
            t.attempt(False, f"connection {index} still open after 15 s")
            continue
        seconds, data = closed[index]
        good = seconds < 9 and (index >= 40 or data.startswith(b"HTTP/1.1 408 "))
        t.attempt(good, f"connection {index} closed after {seconds:.1f} s with {data[:40]!r}")
    t.attempt(statuses == [200] * 8, f"a steady client meanwhile got {statuses}")


# -- LOCALMEM_SYNCHRONOUS ----------------------------------------------------------------------------------------

BAD_SYNCHRONOUS = ["off", "OFF", "0", "1", "2", "3", "extra", "EXTRA", "full;", "normal full", "ful", "yes", "true",
                   "-1", "FULL FULL", "ＦＵＬＬ", "normal\tx", "NORMAL=1", "'FULL'", "fulll"]


def item_synchronous(ctx: Context) -> Tally:
    t = Tally("LOCALMEM_SYNCHRONOUS",
              "20 bad values (OFF, 0–3, EXTRA, `full;`, fullwidth `ＦＵＬＬ`, quoted, …) through `MemoryStore`, the "
              "CLI, `localmem serve` and `localmem mcp`: each refused naming the variable, nothing opened; good "
              "spellings (` full `, `Normal`) must set the pragma")
    from localmem import ConfigError, MemoryStore

    rng = ctx.rng
    folder = ctx.dir("sync")
    db = folder / "s.db"
    with MemoryStore(db, embedder="hash") as store:
        store.store("a memory")
    before = snapshot(db)
    saved = os.environ.get("LOCALMEM_SYNCHRONOUS")
    try:
        for n in range(60):
            value = rng.choice(BAD_SYNCHRONOUS)
            os.environ["LOCALMEM_SYNCHRONOUS"] = value
            try:
                with MemoryStore(db, embedder="hash") as store:
                    actual = store.conn.execute("PRAGMA synchronous").fetchone()[0]
                t.attempt(False, f"{value!r} accepted (synchronous={actual})")
            except ConfigError as exc:
                t.attempt("LOCALMEM_SYNCHRONOUS" in exc.message, exc.message)
        for value, expected in ((" full ", 2), ("Normal", 1), ("FULL", 2), ("normal", 1)):
            os.environ["LOCALMEM_SYNCHRONOUS"] = value
            with MemoryStore(db, embedder="hash") as store:
                actual = store.conn.execute("PRAGMA synchronous").fetchone()[0]
            t.attempt(actual == expected, f"{value!r} gave synchronous={actual}")
    finally:
        if saved is None:
            os.environ.pop("LOCALMEM_SYNCHRONOUS", None)
        else:
            os.environ["LOCALMEM_SYNCHRONOUS"] = saved
    for n in range(12):
        value = rng.choice(BAD_SYNCHRONOUS)
        argv = rng.choice([["stats"], ["store", "x"], ["recall", "memory"], ["doctor"]])
        run = ctx.cli.run("--db", str(db), *argv, cwd=folder, env=clean_env(LOCALMEM_SYNCHRONOUS=value),
                          kind="sync cli")
        cli_ok(t, run, True, f"CLI {argv} with {value!r}", extra_ok="LOCALMEM_SYNCHRONOUS" in run.stderr)
    value = rng.choice(BAD_SYNCHRONOUS)
    try:  # serve must refuse before it listens
        done = subprocess.run([sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash", "serve",
                               "--port", "0"], env=clean_env(LOCALMEM_SYNCHRONOUS=value), capture_output=True,
                              text=True, timeout=30, stdin=subprocess.DEVNULL)
        run = Run(done.returncode, done.stdout, done.stderr, real=True)
    except subprocess.TimeoutExpired:
        run = Run(-9, "", "", hung=True, real=True)
    cli_ok(t, run, True, f"serve with {value!r}", extra_ok="LOCALMEM_SYNCHRONOUS" in run.stderr)
    # The MCP server opens the store at the first tool call: each call must say what is wrong.
    value = rng.choice(BAD_SYNCHRONOUS)
    pipe = McpPipe(db, folder / "mcp.log", clean_env(LOCALMEM_SYNCHRONOUS=value))
    try:
        for name, args in (("store_memory", {"content": "x"}), ("recall_memory", {"query": "memory"}),
                           ("check_database_health", {})):
            reply = pipe.call(name, args, timeout=30)
            # The health tool reports a store that cannot open as an unhealthy backend, not as a failure.
            said = mcp_refused(reply) or (name == "check_database_health" and "Status: error" in tool_text(reply))
            t.attempt(said and "LOCALMEM_SYNCHRONOUS" in tool_text(reply),
                      f"mcp {name} with {value!r}: {tool_text(reply)[:200]}", error=mcp_internal(reply))
    finally:
        t.errors += tracebacks(pipe.close())
    t.lose(lost(before, snapshot(db)), "the file changed")
    return t


# -- the run ------------------------------------------------------------------------------------------------------

ITEMS: list[tuple[str, Callable[[Context], Tally]]] = [
    ("1", item1_destinations), ("2", item2_web_pages), ("3", item3_scoped_tokens), ("4", item4_vectors),
    ("5", item5_doctor_under_writer), ("6", item6_mcp_answers), ("7", item7_bad_values), ("8", item8_imports),
    ("9", item9_read_only), ("10", item10_permissions), ("11", item11_smaller), ("sync", item_synchronous),
    *ROUND2_SURFACES,
]
from benchmarks.attacks.attacks_round2_walks import ITEMS as ROUND2_WALKS  # noqa: E402  (issue 33: 1-4, 8, 10)
ITEMS += ROUND2_WALKS


def start_services(ctx: Context) -> None:
    ctx.open = Server(ctx.dir("open") / "memory.db", clean_env(), ctx.folder / "open" / "serve.log")
    ctx.open.request("POST", "/memory", json={"content": "the first memory of the tokenless server"})
    env = clean_env(LOCALMEM_API_TOKEN=ADMIN, LOCALMEM_API_TOKENS=SCOPED_TOKENS)
    ctx.scoped = Server(ctx.dir("scoped") / "memory.db", env, ctx.folder / "scoped" / "serve.log")
    ctx.mcp = McpPipe(ctx.dir("mcp") / "memory.db", ctx.folder / "mcp" / "mcp.log")


def stop_services(ctx: Context, tallies: dict[str, Tally]) -> None:
    """Stop the shared processes; tracebacks they wrote at the end count against the items that used them."""
    for name, process, items in (("open", ctx.open, ("2", "4", "7", "11")), ("scoped", ctx.scoped, ("3", "11")),
                                 ("mcp", ctx.mcp, ("4", "6", "7"))):
        if process is None:
            continue
        log = process.stop() if isinstance(process, Server) else process.close()
        users = [tallies[i] for i in items if i in tallies]
        if tracebacks(log) and users and not any(t.errors for t in users):
            # Not seen by any item yet (an MCP server's, or one written on the way out).
            users[0].errors += tracebacks(log)
            users[0]._note(f"{name} wrote {tracebacks(log)} tracebacks to stderr")
    ctx.cli.close()


def markdown(tallies: list[Tally], ctx: Context, command: str, elapsed: float) -> str:
    rows = []
    for t in tallies:
        attempts = f"skipped: {t.skipped}" if t.skipped else f"{t.attempts:,}"
        rows.append(f"| {t.item} | {t.tried} | {attempts} | {t.failures} | {t.errors} | {t.lost} |")
    total = [sum(getattr(t, f) for t in tallies) for f in ("attempts", "failures", "errors", "lost")]
    notes = [f"- {t.item}: {note}" for t in tallies for note in t.notes]
    return "\n".join([
        "### Attacks of issues 12 and 33, replayed",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC  ",
        f"Environment: {environment()}  ",
        f"Total run time: {elapsed:.0f} s",
        "",
        "`benchmarks/attacks/attacks.py` replays every attack of issues 12 and 33 (\"Nothing lost, no one in\", rounds one and two) against what a "
        "user runs: `localmem serve` as a subprocess on 127.0.0.1 (tokenless, and with an admin token plus "
        f"`LOCALMEM_API_TOKENS='{SCOPED_TOKENS}'`), `localmem mcp` on a pipe, the CLI in fresh processes "
        f"({ctx.cli.real_runs} as `python -m localmem`, the first of each kind; {ctx.cli.forked_runs} forked from a "
        "pre-imported runner that calls the same `localmem.cli.main`, to fit the time) and `MemoryStore` "
        "in-process, with random spellings and values (`--seed`). **Failures**: the attack got through (a write "
        "stored, a read served, a wrong answer or file mode, a hang, a leftover file; legitimate requests that "
        "must keep working count too). **500s**: HTTP 5xx, tracebacks (also in the servers' stderr), MCP "
        "internal errors, CLI exits other than 0/1/2 (counted once, as a 500). **Data lost**: committed "
        "memories or edges missing or changed afterwards (every column but `last_accessed`, and the "
        "embedding, against a snapshot taken before the attacks).",
        "",
        "| item | what was tried | attempts | failures | 500s | data lost |",
        "|---|---|---:|---:|---:|---:|",
        *rows,
        f"| **total** | | **{total[0]:,}** | **{total[1]}** | **{total[2]}** | **{total[3]}** |",
        *(["", "Notes (first failures per item):", "", *notes] if notes else []),
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--only", default="", help="comma-separated items to run (1,2,...,11,sync); default all")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--budget", type=float, default=90,
                        help="seconds per item before its remaining attempts are dropped (default 90)")
    parser.add_argument("--write", action="store_true", help="write the table into docs/results/history.md")
    args = parser.parse_args(argv)
    chosen = [i for i in args.only.split(",") if i] or [name for name, _ in ITEMS]
    # Stopped from outside (timeout, Ctrl-C): still stop every process and unmount.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    folder = temp_folder("localmem-attacks-")
    start = time.time()
    ctx = Context(args.seed, folder)
    tallies: dict[str, Tally] = {}
    try:
        start_services(ctx)
        for name, function in ITEMS:
            if name not in chosen:
                continue
            began = time.time()
            ctx.deadline = time.monotonic() + args.budget
            try:
                tally = function(ctx)
            except Exception:  # noqa: BLE001 -- the harness broke: say where, keep going
                tally = Tally(f"{name} (harness error)")
                tally.attempt(False, traceback.format_exc()[-600:], error=True)
            tally.seconds = time.time() - began
            tallies[name] = tally
            print(f"{tally.item}: {tally.attempts} attempts, {tally.failures} failures, {tally.errors} 500s, "
                  f"{tally.lost} lost ({tally.seconds:.0f} s){' — ' + tally.skipped if tally.skipped else ''}",
                  flush=True)
            for note in tally.notes:
                print(f"    {note}", flush=True)
    finally:
        stop_services(ctx, tallies)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"work folder kept: {folder}")
    elapsed = time.time() - start
    command = shlex.join(["python", "benchmarks/attacks/attacks.py", *(sys.argv[1:] if argv is None else argv)])
    text = markdown(list(tallies.values()), ctx, command, elapsed)
    print(text)
    if args.write:
        write_part("attacks", text)
        print("wrote docs/results/history.md")
    bad = sum(t.failures + t.errors + t.lost for t in tallies.values())
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
