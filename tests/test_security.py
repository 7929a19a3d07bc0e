"""Security: the auth matrix over every route of the app (read from its route table, so a new
route is covered the day it is added), constant-time token checks, tokens never logged or
echoed, no CORS unless configured, private files and directories whatever the umask, and
``localmem backup`` / ``restore`` (online, consistent while writers run).

``tests/test_http.py`` has the per-credential matrix on a live server and
``tests/test_recall_v1_http.py`` the context-scoped tokens and their uniform 404; this file
does not repeat them.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from localmem import LocalMemError, MemoryStore
from localmem.maintenance import doctor
from localmem.maintenance.backup import backup_database, restore_database
from localmem.cli import main as cli_main
from localmem.storage.migrations import LATEST_VERSION
from tests.store_helpers import assert_consistent, new_store

pytest.importorskip("starlette")
from starlette.routing import Route
from starlette.testclient import TestClient

from localmem.http import authentication as http_authentication
from localmem.http.app import create_app

ADMIN = "admin-Token-0123456789abcdef"
SCOPED = "scoped-Token-fedcba9876543210"
SCOPED_ALL = "every-context-Token-0011223344"  # TOKEN=*: every context, still recall-only
SECRET = "The vault combination is 31-41-59"
MISSING_ID = "6f1e1b8a-0000-4000-8000-000000000000"
# The server answers only loopback Host names (TestClient's default is "testserver").
LOCAL = "http://localhost"
# The memory browser's sign-in: these answer without a token by design (they are, or redirect
# to, the sign-in page, which shows no memory); tests/test_ui_api.py covers them.
SIGN_IN_PATHS = frozenset({"/", "/ui", "/ui/", "/ui/login"})  # "/": a redirect to /ui/
# POST /hooks/{event} asks for the server's hook secret (from its discovery note), not the API
# token, whatever the token settings; tests/test_hook_forward.py covers it with the secret.
HOOK_SECRET = "0123456789abcdef" * 4
HOOK_PATH = "/hooks/UserPromptSubmit"


def mode(path: Any) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# -- the auth matrix over every route ------------------------------------------------------------


@pytest.fixture(scope="module")
def secured():
    store = MemoryStore(":memory:", embedder="hash")
    first = store.store(SECRET, tags=["vault"], context="work")
    second = store.store("Another secret note about the vault", tags=["vault"], context="home")
    app = create_app(store, token=ADMIN, tokens={SCOPED: ["work"], SCOPED_ALL: "*"}, hook_secret=HOOK_SECRET)
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        yield client, app, store, (first, second)
    store.close()


PEER = "0" * 32  # a sync peer's store id
SYNC_BODIES = {"/sync/hello": {"peer": PEER},
               "/sync/page": {"kind": "memories", "after": 0, "until": 0, "peer": PEER},
               "/sync/states": {"ids": [MISSING_ID]},
               "/sync/edge-states": {"keys": [[MISSING_ID, "RELATES_TO", MISSING_ID]]},
               "/sync/memory-edges": {"ids": [MISSING_ID]},
               "/sync/put": {"states": [], "peer": PEER},
               "/sync/put-edges": {"edges": [], "peer": PEER},
               "/sync/bases": {"versions": [], "peer": PEER},
               "/sync/sent": {"peer": PEER, "sent_seq": 0},
               "/sync/seen": {"seen": []}}


def concrete_requests(app: Any, ids: tuple[str, str]) -> list[tuple[str, str, dict[str, Any]]]:
    """One request per (route, method) of the app's route table, with plausible arguments."""
    bodies = {"/memory": {"content": "matrix store"},
              "/memory/batch": {"memories": [{"content": "matrix batch"}]},
              "/associate": {"memory1_id": ids[0], "memory2_id": ids[1]},
              "/api/v1/memory/recall": {"query": "vault"},
              "/memory/{memory_id}": {"importance": 0.4},
              "/ui/api/memories/{memory_id}": {"importance": 0.4},
              "/ui/api/links": {"memory1_id": ids[0], "memory2_id": ids[1]},
              "/ui/api/supersede": {"old_id": MISSING_ID, "new_content": "matrix successor"},
              "/ui/login": {"token": "not-the-token"},
              "/hooks/{event}": {"payload": {"session_id": "s1", "cwd": "/tmp", "prompt": "vault"}},
              **SYNC_BODIES}
    queries = {"/memory/by-tag": "?tags=vault", "/recall": "?query=vault"}
    found = []
    for route in app.routes:
        if not isinstance(route, Route):
            continue
        for method in sorted(route.methods or ()):
            if method == "HEAD":
                continue
            path = route.path.replace("{memory_id}", ids[0]).replace("{event}", HOOK_PATH.rsplit("/", 1)[1]) \
                + queries.get(route.path, "")
            if method == "DELETE" and "{memory_id}" in route.path:
                path = route.path.replace("{memory_id}", MISSING_ID)
            if method == "DELETE" and route.path == "/associate":  # names the edge in the query
                path += f"?memory1_id={ids[0]}&memory2_id={ids[1]}"
            with_body = method in ("POST", "PATCH") or (method, route.path) == ("DELETE", "/ui/api/links")
            kwargs = {"json": bodies[route.path]} if with_body and route.path in bodies else {}
            found.append((method, path, kwargs))
    return found


def test_the_matrix_covers_every_route(secured):
    _, app, _, ids = secured
    covered = {(method, path.split("?")[0].replace(ids[0], "{memory_id}").replace(MISSING_ID, "{memory_id}")
                .replace(HOOK_PATH, "/hooks/{event}"))
               for method, path, _ in concrete_requests(app, ids)}
    routes = {(method, r.path) for r in app.routes if isinstance(r, Route) for method in r.methods or ()
              if method != "HEAD"}
    assert covered == routes and len(routes) >= 12


CREDENTIALS = {
    "none": {},
    "wrong bearer": {"Authorization": "Bearer not-the-token"},
    "wrong x-api-key": {"X-API-Key": "not-the-token"},
    "token prefix": {"Authorization": f"Bearer {ADMIN[:-1]}"},
    "token plus a character": {"Authorization": f"Bearer {ADMIN}x"},
    "empty bearer": {"Authorization": "Bearer "},
    "basic scheme": {"Authorization": f"Basic {ADMIN}"},
    "token as the scheme": {"Authorization": ADMIN},
}


@pytest.mark.parametrize("credential", list(CREDENTIALS))
def test_no_route_answers_without_the_token(secured, credential):
    client, app, _, ids = secured
    for method, path, kwargs in concrete_requests(app, ids):
        response = client.request(method, path, headers=CREDENTIALS[credential], **kwargs)
        if path in SIGN_IN_PATHS:
            assert response.status_code in (200, 401, 415), (method, path, response.status_code)
            assert SECRET not in response.text and "set-cookie" not in response.headers
            continue
        if path == "/health":
            assert response.status_code == 200
            assert "path" not in response.json()  # the file location only for callers with a token
            continue
        if path == HOOK_PATH:  # its own secret, not the token: refused all the same
            assert response.status_code == 403 and "hook secret" in response.json()["message"]
            assert SECRET not in response.text
            continue
        assert response.status_code == 401, (method, path, response.status_code)
        assert response.json() == {"status": "error", "code": 401, "message": "Unauthorized"}
        assert SECRET not in response.text and "not-the-token" not in response.text
        assert ADMIN not in response.text and ADMIN not in json.dumps(dict(response.headers))


def test_head_and_query_token_variants(secured):
    client, app, _, ids = secured
    for method, path, kwargs in concrete_requests(app, ids):
        if method != "GET" or path == "/health" or path in SIGN_IN_PATHS:
            continue
        assert client.head(path).status_code == 401
        joined = "&" if "?" in path else "?"
        assert client.get(f"{path}{joined}api_key=wrong").status_code == 401
        assert client.get(f"{path}{joined}api_key={ADMIN}").status_code in (200, 404)


@pytest.mark.parametrize("token, contexts", [(SCOPED, {"work"}), (SCOPED_ALL, {"work", "home"})],
                         ids=["scoped to work", "scoped to *"])
def test_scoped_token_reaches_only_the_context_aware_route(secured, token, contexts):
    client, app, store, ids = secured
    before = store.health()["memory_count"]
    for method, path, kwargs in concrete_requests(app, ids):
        response = client.request(method, path, headers={"Authorization": f"Bearer {token}"}, **kwargs)
        if path in SIGN_IN_PATHS:  # a scoped token cannot sign in: the page, a refusal, never a cookie
            assert response.status_code in (200, 401, 403, 415), (method, path, response.status_code)
            assert SECRET not in response.text and "set-cookie" not in response.headers
            continue
        if path == "/health":
            assert response.status_code == 200
            body = response.json()
            assert not {"path", "file_size_bytes", "memory_count", "edge_count"} & set(body), body
        elif path == HOOK_PATH:  # a scoped token is no hook secret
            assert response.status_code == 403 and "hook secret" in response.json()["message"]
            assert SECRET not in response.text
        elif path == "/api/v1/memory/recall":
            assert response.status_code == 200
            found = {r["context"] for r in response.json()["results"]}
            assert found and found <= contexts
        else:
            body = response.json()
            assert response.status_code == 403, (method, path)
            assert "recall only" in body["message"] and "LOCALMEM_API_TOKEN" in body["message"]
            assert SECRET not in response.text
    assert store.health()["memory_count"] == before  # nothing stored, nothing deleted


def test_admin_token_reaches_every_route(secured):
    client, app, _, ids = secured
    for method, path, kwargs in concrete_requests(app, ids):
        if method == "DELETE" and "by-tag" in path:
            continue  # would empty the module's store
        if path in SIGN_IN_PATHS:
            continue  # the sign-in itself (tests/test_ui_api.py)
        if path.startswith("/admin/"):
            continue  # needs ADMIN_API_TOKEN in X-Admin-Token as well, as AutoMem's (tests/test_reembed.py)
        headers = {"Authorization": f"Bearer {ADMIN}"}
        if path == HOOK_PATH:  # the admin token alone is refused there; the hook secret opens it
            assert client.request(method, path, headers=headers, **kwargs).status_code == 403
            headers = {"X-Localmem-Hook-Secret": HOOK_SECRET}
        response = client.request(method, path, headers=headers, **kwargs)
        assert response.status_code in (200, 201, 404), (method, path, response.text)


@pytest.mark.parametrize("path", ["/health/", "//memory/by-tag?tags=vault", "/HEALTH", "/health/../recall?query=vault",
                                  "/health%2F..%2Frecall?query=vault", "/recall/?query=vault",
                                  "/memory/by-tag/?tags=vault", "/./recall?query=vault",
                                  "/health;/../recall?query=vault", "/%68ealth/../recall?query=vault"])
def test_path_tricks_do_not_bypass_auth(secured, path):
    client, _, _, _ = secured
    response = client.get(path)
    assert response.status_code in (401, 404), (path, response.status_code)
    assert SECRET not in response.text


def test_options_without_token_discloses_nothing(secured):
    client, app, _, ids = secured
    for method, path, _ in concrete_requests(app, ids):
        response = client.options(path, headers={"Origin": "http://evil.test",
                                                 "Access-Control-Request-Method": method})
        # A foreign origin's preflight is refused, saying why and what to configure.
        assert response.status_code == 403, (path, response.status_code)
        assert "LOCALMEM_ALLOWED_ORIGINS" in response.json()["message"]
        assert SECRET not in response.text
        assert not any(h.lower().startswith("access-control-") for h in response.headers)
        response = client.options(path, headers={"Access-Control-Request-Method": method})
        assert response.status_code in (200, 204, 405), (path, response.status_code)
        assert SECRET not in response.text


def test_no_cors_headers_on_any_route_unless_configured(secured):
    client, app, _, ids = secured
    for method, path, kwargs in concrete_requests(app, ids):
        for headers in ({"Origin": "http://evil.test"},
                        {"Origin": "http://evil.test", "Authorization": f"Bearer {ADMIN}"}):
            response = client.request(method, path, headers=headers, **kwargs)
            assert not any(h.lower().startswith("access-control-") for h in response.headers), (method, path)


def test_tokens_are_compared_in_constant_time(secured, monkeypatch):
    client, _, _, _ = secured
    calls: list[tuple[bytes, bytes]] = []
    real = http_authentication.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(http_authentication.hmac, "compare_digest", spy)
    client.get("/recall?query=x", headers={"Authorization": "Bearer guess"})
    # Every configured token is compared (no early exit on the first match or mismatch).
    assert sorted(b for _, b in calls) == sorted([ADMIN.encode(), SCOPED.encode(), SCOPED_ALL.encode()])
    assert all(a == b"guess" for a, _ in calls)


def test_tokens_never_reach_any_log(secured, caplog):
    """On a live uvicorn server with its access log on: no token, right or wrong, in any record."""
    httpx = pytest.importorskip("httpx")
    from tests.test_http import running

    _, app, _, ids = secured
    caplog.set_level(logging.DEBUG)
    with running(app) as url, httpx.Client(base_url=url, timeout=10) as client:
        for token in (ADMIN, SCOPED, SCOPED_ALL, "wrong-secret-guess"):
            for method, path, kwargs in concrete_requests(app, ids):
                client.request(method, path, headers={"Authorization": f"Bearer {token}"}, **kwargs)
                client.request(method, path, headers={"X-API-Key": token}, **kwargs)
                joined = "&" if "?" in path else "?"
                client.request(method, f"{path}{joined}api_key={token}", **kwargs)
    # The server's records (the test client's own httpx logger logs the URLs it sends).
    server = [r for r in caplog.records if not r.name.startswith("httpx")]
    assert any(r.name == "uvicorn.access" for r in server)
    text = "\n".join(f"{r.name} {r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in server)
    for token in (ADMIN, SCOPED, SCOPED_ALL, "wrong-secret-guess"):
        assert token not in text
    assert "api_key" not in text


def test_api_key_is_stripped_before_routes_see_the_query(secured):
    client, _, store, _ = secured
    seen: list[dict[str, Any]] = []
    original = store.recall

    def spy(query=None, **params):
        seen.append({"query": query, **params})
        return original(query, **params)

    store.recall = spy  # type: ignore[method-assign]
    try:
        assert client.get(f"/recall?query=vault&api_key={ADMIN}&limit=2").status_code == 200
    finally:
        del store.recall
    assert seen and ADMIN not in json.dumps(seen)


# -- private files and directories -----------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077, 0o277])
def test_files_and_created_directories_are_private_whatever_the_umask(tmp_path, umask):
    existing = tmp_path / "existing"
    existing.mkdir()
    os.chmod(existing, 0o755)
    path = existing / "a" / "b" / "c" / "memory.db"
    old = os.umask(umask)
    try:
        with new_store(str(path)) as store:
            store.store("private note")
            assert mode(path) == 0o600
            for suffix in ("-wal", "-shm"):
                companion = Path(f"{path}{suffix}")
                assert companion.exists() and mode(companion) == 0o600, suffix
            for directory in (path.parent, path.parent.parent, path.parent.parent.parent):
                assert mode(directory) == 0o700, directory
            assert mode(existing) == 0o755  # an existing directory is left alone
            copy = tmp_path / "backups" / "nested" / "copy.db"
            backup_database(str(path), str(copy))
            assert mode(copy) == 0o600
            assert mode(copy.parent) == 0o700 and mode(copy.parent.parent) == 0o700
    finally:
        os.umask(old)


# -- backup and restore ------------------------------------------------------------------------------


def test_backup_is_consistent_while_another_process_writes(tmp_path):
    import subprocess
    import sys

    path = str(tmp_path / "live.db")
    with new_store(path) as store:
        store.store_many([{"content": f"seed memory {i} about caches", "tags": [f"t{i % 5}"]} for i in range(200)])
    root = Path(__file__).resolve().parent.parent
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; sys.path.insert(0, sys.argv[2]); from localmem import MemoryStore\n"
        "s = MemoryStore(sys.argv[1], embedder='hash'); i = 0; end = time.time() + 4\n"
        "while time.time() < end:\n"
        "    ids = s.store_many([{'content': f'live write {i}-{j} redis', 'tags': ['live']} for j in range(20)])\n"
        "    s.associate(ids[0], ids[1]); s.update(ids[2], importance=0.9); s.delete(ids[3]); i += 1\n"
        "print(i)"), path, str(root)], stdout=subprocess.PIPE, text=True)
    counts = []
    try:
        time.sleep(0.5)
        for n in range(3):
            copy = str(tmp_path / f"copy-{n}.db")
            result = backup_database(path, copy)
            counts.append(result["memories"])
            conn = apsw.Connection(copy)
            try:
                assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
                assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            finally:
                conn.close()
            assert not Path(copy + "-wal").exists()
            with new_store(copy) as snapshot_store:  # one snapshot: every index agrees
                assert not doctor.problems(doctor.check(snapshot_store))
                assert snapshot_store.health()["memory_count"] == result["memories"]
            time.sleep(0.3)
    finally:
        batches = int(writer.communicate(timeout=60)[0].strip())
    assert batches > 3 and counts == sorted(counts) and counts[-1] > 200


def test_restore_replaces_contents_online_and_keeps_the_old_ones(tmp_path, capsys):
    path = str(tmp_path / "live.db")
    with new_store(path) as store:
        kept = store.store("Memory in the backup about Redis")
    backup = str(tmp_path / "backup.db")
    assert cli_main(["--db", path, "--json", "backup", backup]) == 0
    made = json.loads(capsys.readouterr().out)
    assert made["memories"] == 1 and made["path"] == backup and mode(backup) == 0o600
    reader = new_store(path)  # another program keeps the file open through the restore
    try:
        later = reader.store("Memory written after the backup")
        assert cli_main(["--db", path, "--json", "restore", backup]) == 0
        restored = json.loads(capsys.readouterr().out)
        assert restored["memories"] == 1 and restored["problem_count"] == 0
        assert restored["saved_previous"] and mode(restored["saved_previous"]) == 0o600
        # The open connection sees the restored contents, not a mixture.
        assert [r["id"] for r in reader.recall("memory", limit=5)["results"]] == [kept]
        assert_consistent(reader)
        with new_store(restored["saved_previous"]) as previous:
            assert previous.get(later)["content"] == "Memory written after the backup"
            assert previous.get(kept)["content"] == "Memory in the backup about Redis"
            assert previous.health()["memory_count"] == 2
    finally:
        reader.close()


def test_backup_and_restore_refusals(tmp_path, capsys):
    path = str(tmp_path / "db.db")
    with new_store(path) as store:
        store.store("x")
    backup = str(tmp_path / "b.db")
    assert cli_main(["--db", path, "backup", backup]) == 0
    assert cli_main(["--db", path, "backup", backup]) == 1
    assert "already exists" in capsys.readouterr().err
    assert cli_main(["--db", path, "backup", backup, "--force"]) == 0
    assert cli_main(["--db", str(tmp_path / "none.db"), "backup", str(tmp_path / "n.db")]) == 1
    assert "no database" in capsys.readouterr().err
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    newer = str(tmp_path / "newer.db")
    backup_database(path, newer)
    conn = apsw.Connection(newer)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(LATEST_VERSION + 1),))
    conn.close()
    foreign = str(tmp_path / "foreign.db")
    conn = apsw.Connection(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    before = Path(path).read_bytes()
    for source, fragment in ((str(garbage), "not a SQLite database"), (newer, "newer than this localmem"),
                             (foreign, "not a localmem database"), (str(tmp_path / "missing.db"), "no backup"),
                             (path, "same file")):
        with pytest.raises(LocalMemError) as excinfo:
            restore_database(source, path)
        assert fragment.lower() in excinfo.value.message.lower(), excinfo.value.message
    assert Path(path).read_bytes() == before
    assert not list(tmp_path.glob("db.db.pre-restore-*"))


@pytest.mark.parametrize("command", [["push", "--retries", "0"], ["pull", "--retries", "0"],
                                     ["sync", "--deadline", "0.2"]])
def test_a_token_on_the_command_line_is_said_to_be_readable_by_other_users(tmp_path, capsys, monkeypatch, command):
    """Any local user reads a running process's arguments (ps, /proc/PID/cmdline); its
    environment only the same user. The command still runs (an unreachable URL here)."""
    monkeypatch.setenv("LOCALMEM_DAEMON", "0")
    path = str(tmp_path / "db.db")
    new_store(path).close()
    name, *rest = command
    assert cli_main(["--db", path, name, "http://127.0.0.1:9", "--token", "s3cret", "--timeout", "1", *rest]) == 1
    err = capsys.readouterr().err
    assert "--token" in err and "/proc" in err and "$" in err and "s3cret" not in err, err
    assert cli_main(["--db", path, name, "http://127.0.0.1:9", "--timeout", "1", *rest]) == 1
    assert "/proc" not in capsys.readouterr().err
