"""The memory browser driven in a real headless Chromium (selenium + the OS's chromedriver).

One browser and one server for the module, over a small seeded store with an
API token (so the one-time sign-in link and its cookie are exercised too).
Screenshots of each main page, light, dark and at phone width, go to
tests/artefacts/ui/. The last test reads Chrome's network log: the page asked
for nothing outside 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

uvicorn = pytest.importorskip("uvicorn")
webdriver = pytest.importorskip("selenium.webdriver")

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from localmem import MemoryStore  # noqa: E402
from localmem.errors import NotFoundError  # noqa: E402
from localmem.http.app import create_app  # noqa: E402
from tests.serving import in_thread  # noqa: E402

# LOCALMEM_TEST_CHROMIUM: another browser binary (tests/test_suite_summary.py names a missing one).
CHROMIUM = os.environ.get("LOCALMEM_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTEFACTS = Path(__file__).resolve().parent / "artefacts" / "ui"
TOKEN = "ui-admin-token-for-tests"

pytestmark = pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
                                reason="needs chromium and chromium-driver (apt-get install chromium chromium-driver)")


@pytest.fixture(scope="module")
def seeded() -> Iterator[tuple[MemoryStore, dict[str, str]]]:
    with MemoryStore(":memory:", embedder="hash") as store:
        ids = {
            "coffee": store.store("Alice prefers dark roast coffee in the morning",
                                  tags=["pref/drink", "person/alice"], type="Preference", importance=0.8),
            "tea": store.store("Alice drinks green tea after lunch", tags=["pref/drink", "person/alice"],
                               type="Habit"),
            "deploy": store.store("Deploy the API with blue-green releases", tags=["project/api"],
                                  type="Decision", context="work", importance=0.9),
            "rollback": store.store("Rollbacks go through the release dashboard", tags=["project/api"],
                                    type="Pattern", context="work"),
            "old_editor": store.store("Bob uses vim for editing", tags=["person/bob"], type="Preference"),
            "scratch": store.store("A scratch note about coffee beans to delete", tags=["scratch"]),
        }
        store.associate(ids["deploy"], ids["rollback"], type="LEADS_TO", strength=0.8)
        store.associate(ids["coffee"], ids["tea"], type="RELATES_TO")
        ids["new_editor"] = store.supersede(ids["old_editor"], "Bob switched to helix for editing",
                                            tags=["person/bob"], type="Preference")["memory_id"]
        yield store, ids


@pytest.fixture(scope="module")
def server(seeded) -> Iterator[tuple[str, Any]]:
    from localmem.http.server import uvicorn_config

    store, _ = seeded
    app = create_app(store, token=TOKEN, tokens={})
    with in_thread(lambda port: uvicorn_config(app, host="127.0.0.1", port=port, log_level="warning",
                                               log_config=None)) as url:
        yield url, app


@pytest.fixture(scope="module")
def browser(server) -> Iterator[Any]:
    base, app = server
    profile = tempfile.mkdtemp(prefix="localmem-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions", f"--user-data-dir={profile}",
                 "--window-size=1200,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(20)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    try:
        # The one-time link localmem ui prints: it sets the session cookie and lands on /ui/.
        driver.get(f"{base}/ui/login?code={app.state.ui_sessions.login_code()}")
        wait(driver, lambda d: d.execute_script("return document.body.dataset.ready !== undefined"))
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait(driver: Any, condition: Any, timeout: float = 10) -> Any:
    return WebDriverWait(driver, timeout).until(condition)


def go(driver: Any, fragment: str) -> None:
    """Open a view (``#/...``) and wait until the page has drawn it."""
    driver.execute_script("document.body.dataset.ready = '';"
                          "if (location.hash === arguments[0]) window.dispatchEvent(new HashChangeEvent('hashchange'));"
                          "else location.hash = arguments[0];", fragment)
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready") == fragment)


def drawn(driver: Any) -> None:
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === location.hash"))


def status_text(driver: Any) -> str:
    element = driver.find_element(By.ID, "status")
    return "" if element.get_attribute("hidden") is not None else element.text


def shot(driver: Any, name: str) -> None:
    driver.save_screenshot(str(ARTEFACTS / f"{name}.png"))


def scheme(driver: Any, value: str) -> None:
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                           {"features": [{"name": "prefers-color-scheme", "value": value}]})


def test_search_with_filters_shows_scores_and_highlights(browser, seeded):
    store, ids = seeded
    go(browser, "#/search")
    box = browser.find_element(By.ID, "f-query")
    box.send_keys("coffee")
    tags = browser.find_element(By.ID, "f-tags")
    tags.send_keys("pre")
    # Prefix completion from the store's tag vocabulary.
    wait(browser, lambda d: "pref:drink" in d.execute_script(
        "return [...document.querySelectorAll('#tag-options option')].map((o) => o.value)"))
    tags.clear()
    tags.send_keys("pref")
    Select(browser.find_element(By.ID, "f-type")).select_by_value("Preference")
    browser.find_element(By.ID, "search-go").click()
    wait(browser, lambda d: d.find_elements(By.ID, "result-count"))
    cards = browser.find_elements(By.CSS_SELECTOR, "#results article")
    shown = [c.get_attribute("data-memory-id") for c in cards]
    # The tag filter drops the scratch note, the type filter the Habit; only the coffee preference is left.
    assert shown == [ids["coffee"]], (browser.current_url, browser.find_element(By.ID, "view").text, status_text(browser))
    assert "coffee" in [m.text.lower() for m in cards[0].find_elements(By.TAG_NAME, "mark")]
    assert cards[0].find_elements(By.CSS_SELECTOR, ".scorebar span span")  # score components drawn
    assert "matched by" in cards[0].text
    assert "type=Preference" in browser.current_url and "tags=pref" in browser.current_url
    shot(browser, "search")


def test_a_refused_filter_is_shown_not_swallowed(browser):
    go(browser, "#/search?query=coffee&state_mode=sideways")
    message = status_text(browser)
    assert "state_mode" in message, message
    assert not browser.find_elements(By.CSS_SELECTOR, "#results article")
    go(browser, "#/search?query=coffee&time_query=" + "not%20a%20time%20at%20all")
    assert "not understood" in status_text(browser)
    go(browser, "#/search?query=coffee&time_query=" + "today")
    assert "today:" in browser.find_element(By.ID, "result-count").text
    assert browser.find_elements(By.CSS_SELECTOR, "#results article")


def test_the_search_pages_context_is_offered_and_answered_as_a_ranking_hint(browser, seeded):
    # recall's context ranks a context's memories first; it is not a filter, and the page must not offer it as one.
    store, ids = seeded
    go(browser, "#/search?query=coffee&context=work")
    wait(browser, lambda d: d.find_elements(By.ID, "result-count"))
    label = browser.find_element(By.CSS_SELECTOR, 'label[for="f-context"]').text
    assert label == "Rank a context first"
    assert Select(browser.find_element(By.ID, "f-context")).first_selected_option.text == "work"
    assert "ranking hint" in browser.find_element(By.ID, "result-count").text
    shown = [c.get_attribute("data-memory-id") for c in browser.find_elements(By.CSS_SELECTOR, "#results article")]
    assert ids["coffee"] in shown  # a memory of no context "work" is still found


def test_open_a_memory_and_follow_an_edge(browser, seeded):
    store, ids = seeded
    go(browser, "#/search?query=deploy%20releases")
    browser.find_element(By.CSS_SELECTOR, f'#results article[data-memory-id="{ids["deploy"]}"] .content a').click()
    drawn(browser)
    assert ids["deploy"] in browser.current_url
    assert browser.find_element(By.ID, "memory-content").text == "Deploy the API with blue-green releases"
    edge = browser.find_element(By.CSS_SELECTOR, f'#edges-outgoing a[data-memory-id="{ids["rollback"]}"]')
    assert "LEADS_TO" in browser.find_element(By.ID, "edges-outgoing").text
    shot(browser, "memory")
    edge.click()
    drawn(browser)
    assert browser.current_url.endswith(f"#/memory/{ids['rollback']}")
    assert "LEADS_TO" in browser.find_element(By.ID, "edges-incoming").text
    assert browser.find_elements(By.CSS_SELECTOR, f'#edges-incoming a[data-memory-id="{ids["deploy"]}"]')


def test_the_supersession_chain_marks_the_current_version(browser, seeded):
    store, ids = seeded
    go(browser, f"#/memory/{ids['old_editor']}")
    steps = browser.find_elements(By.CSS_SELECTOR, "#chain li")
    assert len(steps) == 2
    assert "vim" in steps[0].text and "this" in steps[0].get_attribute("class")
    assert "helix" in steps[1].text and "current" in steps[1].text
    assert "current-version" in steps[1].get_attribute("class")
    assert browser.find_element(By.ID, "state").text != "current"
    steps[1].find_element(By.TAG_NAME, "a").click()
    drawn(browser)
    assert browser.find_element(By.ID, "state").text == "current"
    shot(browser, "chain")


def test_edit_a_memory_and_see_it_through_the_python_api(browser, seeded):
    store, ids = seeded
    go(browser, f"#/memory/{ids['tea']}")
    # A value the store refuses: its message is on the page, the memory unchanged.
    importance = browser.find_element(By.ID, "edit-importance")
    importance.clear()
    importance.send_keys("7")
    browser.find_element(By.ID, "save").click()
    wait(browser, lambda d: status_text(d))
    assert "importance" in status_text(browser).lower()
    assert store.get(ids["tea"])["importance"] == 0.5
    content = browser.find_element(By.ID, "edit-content")
    content.clear()
    content.send_keys("Alice drinks jasmine tea after lunch")
    tags = browser.find_element(By.ID, "edit-tags")
    tags.clear()
    tags.send_keys("pref/drink, tea")
    importance = browser.find_element(By.ID, "edit-importance")
    importance.clear()
    importance.send_keys("0.9")
    Select(browser.find_element(By.ID, "edit-type")).select_by_value("Preference")
    browser.find_element(By.ID, "save").click()
    wait(browser, lambda d: status_text(d) == "Saved")
    record = store.get(ids["tea"])
    assert record["content"] == "Alice drinks jasmine tea after lunch"
    assert record["tags"] == ["pref/drink", "tea"]
    assert record["importance"] == 0.9 and record["type"] == "Preference"
    wait(browser, lambda d: d.find_element(By.ID, "memory-content").text == record["content"])


def test_link_and_unlink_from_the_page(browser, seeded):
    store, ids = seeded
    go(browser, f"#/memory/{ids['rollback']}")
    browser.find_element(By.CSS_SELECTOR, "details:nth-of-type(3) summary").click()
    browser.find_element(By.ID, "link-target").send_keys(ids["coffee"][:8])  # a short id, as the page shows them
    Select(browser.find_element(By.ID, "link-type")).select_by_value("CONTRADICTS")
    browser.find_element(By.CSS_SELECTOR, "#link button").click()
    wait(browser, lambda d: status_text(d) == "Linked")
    assert [e["type"] for e in store.get(ids["rollback"], with_edges=True)["edges"]["outgoing"]] == ["CONTRADICTS"]
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#edges-outgoing button"))
    browser.find_element(By.CSS_SELECTOR, "#edges-outgoing button").click()
    wait(browser, lambda d: status_text(d) == "Edge removed")
    assert store.get(ids["rollback"], with_edges=True)["edges"]["outgoing"] == []


def test_delete_asks_first_then_deletes(browser, seeded):
    store, ids = seeded
    go(browser, f"#/memory/{ids['scratch']}")
    browser.find_element(By.ID, "delete").click()
    confirm = browser.find_element(By.ID, "confirm-delete")
    assert confirm.is_displayed()
    store.get(ids["scratch"])  # asking deletes nothing
    browser.find_element(By.ID, "delete-yes").click()
    wait(browser, lambda d: d.execute_script("return location.hash") == "#/browse")
    with pytest.raises(NotFoundError):
        store.get(ids["scratch"])


def test_browse_graph_and_health_pages(browser, seeded):
    store, ids = seeded
    go(browser, "#/browse")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#memory-list article")) == len(ids) - 1  # one deleted
    assert browser.find_elements(By.CSS_SELECTOR, "#timeline rect")
    tree = browser.find_element(By.CSS_SELECTOR, "ul.tree").text
    assert "person" in tree and "alice" in tree and "project" in tree
    shot(browser, "browse")
    browser.find_element(By.LINK_TEXT, "api").click()
    drawn(browser)
    listed = {a.get_attribute("data-memory-id") for a in browser.find_elements(By.CSS_SELECTOR, "#memory-list article")}
    assert listed == {ids["deploy"], ids["rollback"]}
    go(browser, "#/browse?context=work")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#memory-list article")) == 2

    go(browser, f"#/graph/{ids['deploy']}?depth=2")
    circles = browser.find_elements(By.CSS_SELECTOR, "#graph circle")
    assert {c.get_attribute("data-memory-id") for c in circles} == {ids["deploy"], ids["rollback"]}
    assert "LEADS_TO" in browser.find_element(By.CSS_SELECTOR, ".legend").text
    shot(browser, "graph")
    browser.find_element(By.CSS_SELECTOR, f'#graph circle[data-memory-id="{ids["rollback"]}"]').click()
    drawn(browser)
    assert browser.current_url.endswith(f"#/memory/{ids['rollback']}")
    go(browser, "#/graph")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#hubs li")) >= 2

    go(browser, "#/health")
    stats = browser.find_element(By.ID, "stats").text
    assert f"{store.health()['memory_count']} (" in stats and "agree" in stats
    assert "no problems" in browser.find_element(By.TAG_NAME, "h2").text
    shot(browser, "health")


def test_dark_scheme_and_phone_width_screenshots(browser, seeded):
    store, ids = seeded
    scheme(browser, "dark")
    try:
        go(browser, "#/search?query=coffee")
        background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(21, 23, 26)"
        shot(browser, "search-dark")
        go(browser, f"#/memory/{ids['coffee']}")
        shot(browser, "memory-dark")
        browser.set_window_size(390, 844)
        go(browser, "#/search?query=coffee")
        # Nothing wider than the phone's screen: no sideways scrolling.
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        shot(browser, "search-phone")
        go(browser, f"#/memory/{ids['coffee']}")
        assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        shot(browser, "memory-phone")
    finally:
        scheme(browser, "light")
        browser.set_window_size(1200, 900)


def test_keyboard_slash_focuses_the_search_box(browser):
    go(browser, "#/search")
    browser.find_element(By.TAG_NAME, "body").click()
    browser.find_element(By.TAG_NAME, "body").send_keys("/")
    assert browser.switch_to.active_element.get_attribute("id") == "f-query"


def test_the_page_asked_for_nothing_outside_loopback(browser):
    # Last in the module: the log covers every page the tests above opened.
    # Chromium's own start page (chrome://...) is no request of ours; every network request is.
    page_urls, network_urls = [], []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            params = message["params"]
            url = params["request"]["url"]
            if params.get("documentURL", "").startswith("http://127.0.0.1:"):
                page_urls.append(url)
            if url.split(":", 1)[0] in ("http", "https", "ws", "wss", "ftp"):
                network_urls.append(url)
    assert len(page_urls) > 10 and any("/ui/api/search" in u for u in page_urls)
    assert [u for u in page_urls if not u.startswith(("http://127.0.0.1:", "data:"))] == []
    assert [u for u in network_urls if not u.startswith("http://127.0.0.1:")] == []
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "favicon" not in e["message"]
                and "the server responded with a status of 4" not in e["message"]]

