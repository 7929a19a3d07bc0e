"""The memory browser's HTTP routes: auth matrix, sign-in cookie, bad input → 400 JSON, page headers,
and ``localmem ui`` as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from localmem import MemoryStore  # noqa: E402
from localmem.errors import NotFoundError  # noqa: E402
from localmem.http.app import create_app  # noqa: E402

LOCAL = "http://127.0.0.1:8001"
ADMIN = "admin-token-ui"
SCOPED = "scoped-token-ui"
MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture()
def store():
    with MemoryStore(":memory:", embedder="hash") as s:
        yield s


@pytest.fixture()
def seeded(store):
    a = store.store("Alice prefers dark roast coffee", tags=["pref/drink"], type="Preference")
    b = store.store("Deploy with blue-green releases", tags=["project/api"], context="work")
    store.associate(a, b, type="RELATES_TO")
    return store, a, b


def routes(a: str, b: str) -> list[tuple[str, str, dict | None, bool]]:
    """(method, path, JSON body, writes) for every /ui/api route."""
    return [
        ("GET", "/ui/api/vocabulary", None, False),
        ("GET", "/ui/api/search?query=coffee&tags=pref", None, False),
        ("GET", "/ui/api/tags?prefix=pr", None, False),
        ("GET", "/ui/api/tag-tree", None, False),
        ("GET", "/ui/api/timeline?unit=week", None, False),
        ("GET", "/ui/api/contexts", None, False),
        ("GET", "/ui/api/memories?limit=5", None, False),
        ("GET", f"/ui/api/memories/{a}", None, False),
        ("GET", f"/ui/api/graph/{a}?depth=2", None, False),
        ("GET", "/ui/api/hubs", None, False),
        ("GET", "/ui/api/health", None, False),
        ("POST", "/ui/api/links", {"memory1_id": b, "memory2_id": a, "type": "LEADS_TO"}, True),
        ("DELETE", "/ui/api/links", {"memory1_id": b, "memory2_id": a, "type": "LEADS_TO"}, True),
        ("PATCH", f"/ui/api/memories/{a}", {"importance": 0.9}, True),
        ("POST", "/ui/api/supersede", {"old_id": b, "new_content": "Deploy with canaries"}, True),
        ("DELETE", f"/ui/api/memories/{a}", None, True),
    ]


def send(client: TestClient, method: str, path: str, body: dict | None, **headers: str):
    return client.request(method, path, json=body, headers=headers)


def test_every_route_answers_without_a_token_configured(seeded):
    store, a, b = seeded
    with TestClient(create_app(store, token=None, tokens={}), base_url=LOCAL) as client:
        for method, path, body, _ in routes(a, b):
            response = send(client, method, path, body)
            assert response.status_code == 200, (method, path, response.text)
            assert response.headers["content-type"].startswith("application/json")
    assert store.get(b)["t_invalid"] is not None  # superseded through the page's route
    with pytest.raises(NotFoundError):
        store.get(a)


def test_auth_matrix_none_scoped_admin(seeded):
    store, a, b = seeded
    app = create_app(store, token=ADMIN, tokens={SCOPED: "*"})
    with TestClient(app, base_url=LOCAL) as client:
        for method, path, body, writes in routes(a, b):
            before = store.get(b, with_edges=True) if store_has(store, b) else None
            anonymous = send(client, method, path, body)
            assert anonymous.status_code == 401, (method, path)
            scoped = send(client, method, path, body, Authorization=f"Bearer {SCOPED}")
            assert scoped.status_code == 403, (method, path)
            assert "scoped" in scoped.json()["message"]
            if store_has(store, b):
                assert store.get(b, with_edges=True) == before  # refused calls changed nothing
            admin = send(client, method, path, body, Authorization=f"Bearer {ADMIN}")
            assert admin.status_code == 200, (method, path, admin.text)


def store_has(store: MemoryStore, memory_id: str) -> bool:
    try:
        store.get(memory_id)
    except NotFoundError:
        return False
    return True


def test_one_time_login_code_sets_a_strict_httponly_cookie_for_ui_only(seeded):
    store, a, _ = seeded
    app = create_app(store, token=ADMIN, tokens={SCOPED: "*"})
    code = app.state.ui_sessions.login_code()
    with TestClient(app, base_url=LOCAL) as client:
        page = client.get("/ui/", follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"] == "/ui/login"
        signed = client.get(f"/ui/login?code={code}", follow_redirects=False)
        assert signed.status_code == 303 and signed.headers["location"] == "/ui/"
        cookie = signed.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/ui" in cookie
        session = client.cookies.get("localmem_ui")
        assert session
        assert client.get("/ui/").status_code == 200
        assert client.get(f"/ui/api/memories/{a}").status_code == 200
        # The cookie is for the browser's pages only: the API itself still wants the token.
        client.cookies.set("localmem_ui", session, path="/")
        assert client.get(f"/memory/{a}").status_code == 401
        # The code is spent: a second use signs nobody in.
        client.cookies.clear()
        again = client.get(f"/ui/login?code={code}", follow_redirects=False)
        assert again.status_code == 401 and "set-cookie" not in again.headers
        assert "<form" in again.text  # the form says how to sign in instead
        assert client.get("/ui/api/health").status_code == 401
        client.cookies.set("localmem_ui", "forged")
        assert client.get("/ui/api/health").status_code == 401


def test_token_login_form_admin_only(seeded):
    store, _, _ = seeded
    with TestClient(create_app(store, token=ADMIN, tokens={SCOPED: "*"}), base_url=LOCAL) as client:
        assert client.get("/ui/login").status_code == 200  # the form is open
        assert client.get("/ui/static/app.js").status_code == 200  # and what it loads
        assert client.post("/ui/login", json={"token": SCOPED}).status_code == 401
        assert client.post("/ui/login", json={"token": "wrong"}).status_code == 401
        assert client.post("/ui/login", content=f"token={ADMIN}",
                           headers={"Content-Type": "application/x-www-form-urlencoded"}).status_code == 415
        bad = client.post("/ui/login", json={"token": ADMIN, "extra": 1})
        assert bad.status_code == 400 and "extra" in bad.json()["message"]
        ok = client.post("/ui/login", json={"token": ADMIN})
        assert ok.status_code == 200 and "localmem_ui=" in ok.headers["set-cookie"]
        assert client.get("/ui/api/health").status_code == 200
        out = client.post("/ui/logout")
        assert out.status_code == 200
        assert client.get("/ui/api/health").status_code == 401


def test_host_and_origin_rules_apply_to_the_ui(seeded):
    store, a, _ = seeded
    with TestClient(create_app(store), base_url=LOCAL) as client:
        assert client.get("/ui/", headers={"Host": "evil.example"}).status_code == 421
        cross = client.patch(f"/ui/api/memories/{a}", json={"importance": 0.1},
                             headers={"Origin": "http://evil.example"})
        assert cross.status_code == 403
        assert store.get(a)["importance"] != 0.1
        # The page's own origin passes the same guard.
        same = client.patch(f"/ui/api/memories/{a}", json={"importance": 0.1},
                            headers={"Origin": LOCAL, "Sec-Fetch-Site": "same-origin"})
        assert same.status_code == 200 and store.get(a)["importance"] == 0.1


def test_bad_input_is_400_json_and_changes_nothing(seeded):
    store, a, b = seeded
    before = store.get(a, with_edges=True)
    cases = [
        ("GET", "/ui/api/search?query=x&limit=abc", None, "limit"),
        ("GET", "/ui/api/search?query=x&state_mode=sideways", None, "state_mode"),
        ("GET", "/ui/api/search?query=x&type=Nonsense", None, "type"),
        ("GET", "/ui/api/tags?prefix=p&limit=many", None, "limit"),
        ("GET", "/ui/api/timeline?unit=month", None, "unit"),
        ("GET", "/ui/api/memories?offset=first", None, "offset"),
        ("GET", "/ui/api/memories/not-a-uuid", None, "UUID"),
        ("GET", f"/ui/api/graph/{a}?depth=two", None, "depth"),
        ("GET", "/ui/api/hubs?limit=x", None, "limit"),
        ("PATCH", f"/ui/api/memories/{a}", {"importance": 7}, "importance"),
        ("PATCH", f"/ui/api/memories/{a}", {"type": "Nonsense"}, "type"),
        ("PATCH", f"/ui/api/memories/{a}", {"improtance": 0.2}, "improtance"),
        ("PATCH", f"/ui/api/memories/{a}", {}, "nothing to change"),
        ("POST", "/ui/api/links", {"memory1_id": a, "memory2_id": a, "type": "RELATES_TO"}, ""),
        ("POST", "/ui/api/links", {"memory1_id": a, "memory2_id": b, "type": "NOPE"}, "type"),
        ("DELETE", "/ui/api/links", {"memory1_id": a, "memory2_id": b, "strength": 1}, "strength"),
        ("POST", "/ui/api/supersede", {"old_id": a}, "new_content"),
        ("POST", "/ui/api/supersede", {"old_id": a, "new_content": a}, "itself"),
    ]
    with TestClient(create_app(store), base_url=LOCAL) as client:
        for method, path, body, word in cases:
            response = send(client, method, path, body)
            assert response.status_code == 400, (method, path, body, response.text)
            answer = response.json()
            assert answer["status"] == "error" and answer["code"] == 400
            assert word.lower() in answer["message"].lower(), (path, answer["message"])
        assert client.get(f"/ui/api/memories/{MISSING}").status_code == 404
        assert client.patch(f"/ui/api/memories/{a}", content="{bad json",
                            headers={"Content-Type": "application/json"}).status_code == 400
        assert client.patch(f"/ui/api/memories/{a}", content="importance=1",
                            headers={"Content-Type": "text/plain"}).status_code == 415
    assert store.get(a, with_edges=True) == before


def test_the_page_forbids_other_origins_by_csp(store):
    with TestClient(create_app(store), base_url=LOCAL) as client:
        page = client.get("/ui/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "connect-src 'self'" in policy
        assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/"
        html = page.text
        assert "http://" not in html and "https://" not in html  # nothing fetched from elsewhere
        ui = Path(__file__).resolve().parent.parent / "localmem" / "ui"
        for name in ("static/app.js", "static/style.css", "pages/login.html", "static/login.js"):
            text = (ui / name).read_text()
            assert "https://" not in text and "//cdn" not in text, name


def test_a_non_ascii_login_code_is_refused_not_a_500(seeded):
    """Issue 33 item 15: compare_digest raised TypeError on a non-ASCII str while a code was pending."""
    store, _, _ = seeded
    app = create_app(store, token=ADMIN)
    code = app.state.ui_sessions.login_code()
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        for bad in ("caf\u00e9", "\u00e9" * 32, code[:-1] + "\u00ff", "%ED%A0%80", "%FF%FE"):
            answer = client.get(f"/ui/login?code={bad}", follow_redirects=False)
            assert answer.status_code in (400, 401) and "set-cookie" not in answer.headers, (bad, answer.text[:200])
        sessions = app.state.ui_sessions
        assert not sessions.valid("caf\u00e9") and not sessions.valid("\ud800")  # a cookie's value likewise
        sessions.end("caf\u00e9")
        signed = client.get(f"/ui/login?code={code}", follow_redirects=False)
        assert signed.status_code == 303  # the pending code still signs in


def test_the_pages_are_served_only_with_their_headers(store):
    """Issue 33 item 16: /ui/static/index.html served the page without CSP, frame-ancestors,
    Referrer-Policy and no-store (and without signing in)."""
    with TestClient(create_app(store, token=ADMIN), base_url=LOCAL) as client:
        for path in ("/ui/static/index.html", "/ui/static/login.html", "/ui/static/./index.html",
                     "/ui/static/x/../index.html"):
            answer = client.get(path, follow_redirects=False)
            assert answer.status_code == 404, (path, answer.status_code)
        assert client.get("/ui/static/app.js").status_code == 200
        page = client.get("/ui/login")
        assert page.status_code == 200 and "<form" in page.text
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["referrer-policy"] == "no-referrer" and page.headers["cache-control"] == "no-store"


def test_localmem_ui_prints_the_url_and_serves_the_page(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
           "LOCALMEM_API_TOKEN": ADMIN}
    env.pop("LOCALMEM_API_TOKENS", None)
    db = tmp_path / "ui.db"
    command = [sys.executable, "-m", "localmem", "--db", str(db), "--embedder", "hash"]
    subprocess.run([*command, "store", "A memory to see in the browser"], env=env, check=True,
                   capture_output=True)
    process = subprocess.Popen([*command, "ui"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("localmem memory browser: http://127.0.0.1:"), line
        url = line.split(": ", 1)[1].strip()
        assert "/ui/login?code=" in url  # a token is set: a one-time sign-in link
        base = url.split("/ui/")[0]
        deadline = time.monotonic() + 10
        while True:
            try:
                opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
                with opener.open(url, timeout=5) as response:  # follows the 303 to /ui/ with the cookie
                    assert response.status == 200 and b"app.js" in response.read()
                    break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
                time.sleep(0.1)
        with opener.open(f"{base}/ui/api/memories", timeout=5) as response:
            assert json.loads(response.read())["count"] == 1
    finally:
        process.terminate()
        process.communicate(timeout=10)


FAKE_BROWSER = """#!{python}
import json, sys
with open({record!r}, "a") as handle:
    handle.write(json.dumps({{"argv": sys.argv, "cmdline": open("/proc/self/cmdline", "rb").read().decode(),
                             "environ": open("/proc/self/environ", "rb").read().decode()}}) + "\\n")
"""


@pytest.mark.parametrize("token", [ADMIN, None], ids=["token", "per-run-secret"])
def test_localmem_ui_open_keeps_the_sign_in_code_off_the_browsers_command_line(tmp_path, token):
    """Issue 33 item 5: ``--open`` passed the one-time code on the browser's command line,
    which another local user read from /proc and redeemed first. Without a token the browser
    signs in the same way (``localmem ui`` makes a secret of its own, in no child's environment)."""
    import stat

    record = tmp_path / "browser.jsonl"
    browser = tmp_path / "fake-browser"
    browser.write_text(FAKE_BROWSER.format(python=sys.executable, record=str(record)))
    browser.chmod(0o700)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN", "LOCALMEM_API_TOKENS")}
    env.update(PYTHONPATH=str(Path(__file__).resolve().parent.parent), BROWSER=str(browser),
               **({"LOCALMEM_API_TOKEN": token} if token else {}))
    command = [sys.executable, "-m", "localmem", "--db", str(tmp_path / "ui.db"), "--embedder", "hash"]
    subprocess.run([*command, "store", "A memory to see in the browser"], env=env, check=True, capture_output=True)
    process = subprocess.Popen([*command, "ui", "--open"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    try:
        printed = process.stdout.readline().split(": ", 1)[1].strip()
        deadline = time.monotonic() + 20
        while not record.exists() or not record.read_text().strip():
            assert time.monotonic() < deadline and process.poll() is None, "the browser was not started"
            time.sleep(0.05)
        started = json.loads(record.read_text().splitlines()[0])
        everything = " ".join(started["argv"]) + started["cmdline"]
        assert "code=" not in everything and printed.split("code=")[1] not in everything, started
        given = dict(entry.split("=", 1) for entry in started["environ"].split("\0") if "=" in entry)
        added = {k: v for k, v in given.items() if env.get(k) != v}
        assert set(added) <= {"LC_CTYPE"}, added  # Python's locale coercion at most: no secret handed on
        page = Path(started["argv"][-1].removeprefix("file://"))
        assert started["argv"][-1].startswith("file:///") and page.is_file(), started
        assert stat.S_IMODE(page.stat().st_mode) == 0o600 and stat.S_IMODE(page.parent.stat().st_mode) == 0o700
        link = page.read_text().split('url=', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        assert "/ui/login?code=" in link and link != printed  # its own code
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        while True:
            try:
                with opener.open(link, timeout=5) as response:  # the code in the file signs in
                    assert response.status == 200 and b"app.js" in response.read()
                    break
            except OSError:
                assert time.monotonic() < deadline and process.poll() is None, process.stderr.read()
                time.sleep(0.1)
        with opener.open(link.split("/ui/")[0] + "/ui/api/memories", timeout=5) as response:
            assert json.loads(response.read())["count"] == 1
        assert not page.parent.exists()  # removed once its code is spent
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_localmem_ui_refuses_a_bad_port(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    result = subprocess.run([sys.executable, "-m", "localmem", "--db", str(tmp_path / "x.db"), "ui",
                             "--port", "70000"], env=env, capture_output=True, text=True)
    assert result.returncode == 2 and "--port 70000" in result.stderr and "65535" in result.stderr
