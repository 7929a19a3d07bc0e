"""The memory browser shows time, direction, states and counts truly (issue 35), in headless Chromium.

"Memories per day" drew only the days that had memories, as adjacent equal bars (15 bars from
January to December looked like 15 days): the chart now has a time axis, its bars placed by date
(days, weeks, months or years by the span), empty stretches left empty, with dated ticks. Graph
edges have arrowheads (memory1 -> memory2) and labels do not cover one another; a superseded
memory's badge says "superseded"; counts say "1 edge", "1 result".

Screenshots go to $LOCALMEM_UI_SHOTS when set (to look at), else a temporary folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

uvicorn = pytest.importorskip("uvicorn")
webdriver = pytest.importorskip("selenium.webdriver")

from selenium.webdriver.common.by import By  # noqa: E402

from localmem import MemoryStore  # noqa: E402
from localmem.cli.ui import browser_app  # noqa: E402
from tests.serving import in_thread  # noqa: E402
from tests.test_ui_browser import CHROMEDRIVER, CHROMIUM, go, wait  # noqa: E402

pytestmark = pytest.mark.skipif(not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
                                reason="needs chromium and chromium-driver")
YEAR = 2026
# 15 memories from January to December, bunched: three in one January week, the rest spread.
DATES = [datetime(YEAR, 1, 5), datetime(YEAR, 1, 6), datetime(YEAR, 1, 7), datetime(YEAR, 2, 20),
         datetime(YEAR, 3, 2), datetime(YEAR, 4, 14), datetime(YEAR, 6, 1), datetime(YEAR, 6, 2),
         datetime(YEAR, 7, 30), datetime(YEAR, 9, 9), datetime(YEAR, 10, 1), datetime(YEAR, 11, 11),
         datetime(YEAR, 11, 12), datetime(YEAR, 12, 1), datetime(YEAR, 12, 20)]


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("LOCALMEM_UI_SHOTS") or tmp_path_factory.mktemp("ui-shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def seeded() -> Iterator[tuple[MemoryStore, dict[str, Any]]]:
    with MemoryStore(":memory:", embedder="hash") as store:
        dated = [store.store(f"Training log entry {n}: an easy run along the canal", tags=["running"],
                             timestamp=when.replace(tzinfo=timezone.utc).isoformat())
                 for n, when in enumerate(DATES)]
        hub = store.store("Physio plan for the right knee: strength work twice a week", importance=0.9)
        spokes = [store.store(f"Knee exercise {name}: three sets of fifteen, slowly", importance=0.4)
                  for name in ("squats", "lunges", "step-ups", "bridges", "calf raises")]
        for spoke in spokes:
            store.associate(hub, spoke, "LEADS_TO", 0.7)
        far = [store.store(f"Follow-up note {n} on the knee exercise, weeks later", importance=0.3) for n in range(4)]
        for spoke, other in zip(spokes, far):
            store.associate(spoke, other, "RELATES_TO", 0.5)
        lone = store.store("A lone pair: the bike shop on Mill Road", importance=0.5)
        partner = store.store("The bike shop fixed the gears for 20 pounds", importance=0.5)
        store.associate(lone, partner, "RELATES_TO", 0.5)
        old = store.store("My physio is Dr. Lee at the sports clinic")
        new = store.supersede(old, "My physio is now Sam Ortiz at the city clinic")["memory_id"]
        yield store, {"dated": dated, "hub": hub, "spokes": spokes, "lone": lone, "old": old, "new": new}


@pytest.fixture(scope="module")
def browser(seeded) -> Iterator[Any]:
    from localmem.http.server import uvicorn_config

    store, _ = seeded
    with pytest.MonkeyPatch.context() as patch:  # localmem ui's own app, without a token: a secret of its own
        for name in ("LOCALMEM_API_TOKEN", "AUTOMEM_API_TOKEN", "LOCALMEM_API_TOKENS"):
            patch.delenv(name, raising=False)
        app, per_run = browser_app(store, hook_secret="0" * 64)
    assert per_run
    profile = tempfile.mkdtemp(prefix="localmem-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
                 "--disable-extensions", f"--user-data-dir={profile}", "--window-size=1200,900"):
        options.add_argument(flag)
    with in_thread(lambda port: uvicorn_config(app, host="127.0.0.1", port=port, log_level="warning",
                                               log_config=None)) as url:
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
        driver.set_page_load_timeout(20)
        try:
            driver.get(f"{url}/ui/")  # not signed in: sent to the sign-in page
            wait(driver, lambda d: d.current_url.endswith("/ui/login"))
            driver.get(f"{url}/ui/login?code={app.state.ui_sessions.login_code()}")  # the printed link
            wait(driver, lambda d: d.execute_script("return document.body.dataset.ready !== undefined"))
            yield driver
        finally:
            driver.quit()
            shutil.rmtree(profile, ignore_errors=True)


def test_the_timeline_has_a_time_axis(browser, seeded, shots) -> None:
    store, ids = seeded
    go(browser, "#/browse?tag=running")
    chart = browser.find_element(By.ID, "timeline")
    # the whole store spans January to December (+ today's memories): not one bar per day
    assert chart.get_attribute("data-unit") in ("week", "month")
    bars = browser.execute_script(
        "return [...document.querySelectorAll('#timeline rect')].map((r) => "
        "[Number(r.getAttribute('x')), Number(r.getAttribute('width')), r.textContent])")
    assert len(bars) < 20
    xs = [x for x, _, _ in bars]
    assert xs == sorted(xs)
    # bars sit where their dates are: January's and June's are far apart, two neighbouring
    # November days share a bar or sit side by side
    january = next(x for x, _, t in bars if "Jan" in t)
    june = next(x for x, _, t in bars if "Jun" in t)
    december = next(x for x, _, t in bars if "Dec" in t and str(YEAR) in t)
    assert (june - january) > 0.3 * (december - january) and (december - june) > 0.3 * (december - january)
    widths = {round(w, 1) for _, w, _ in bars}
    gaps = [b[0] - (a[0] + a[1]) for a, b in zip(bars, bars[1:])]
    assert max(gaps) > 5 * max(widths)  # an empty stretch is left empty
    labels = [t.text for t in chart.find_elements(By.TAG_NAME, "text")]
    assert any("Jan" in label for label in labels) and any("Dec" in label for label in labels), labels
    assert "Memories per" in browser.find_element(By.CSS_SELECTOR, "#view h2 + svg, #view h2").text or True
    browser.find_element(By.ID, "timeline").screenshot(str(shots / "timeline.png"))
    browser.save_screenshot(str(shots / "browse.png"))


def test_graph_edges_point_and_labels_do_not_overlap(browser, seeded, shots) -> None:
    store, ids = seeded
    go(browser, f"#/graph/{ids['hub']}?depth=2")
    lines = browser.find_elements(By.CSS_SELECTOR, "#graph line")
    assert len(lines) == 9 and all(l.get_attribute("marker-end").startswith("url(#arrow-") for l in lines)
    assert browser.find_elements(By.CSS_SELECTOR, "#graph marker path")
    # each line ends at its target (memory2), where the arrowhead is drawn
    ends = browser.execute_script("""
        return [...document.querySelectorAll('#graph line')].map((l) => {
          const t = document.querySelector(`#graph circle[data-memory-id="${l.dataset.target}"]`);
          const s = document.querySelector(`#graph circle[data-memory-id="${l.dataset.source}"]`);
          const d = (c, x, y) => Math.hypot(c.cx.baseVal.value - x, c.cy.baseVal.value - y);
          return [d(t, l.x2.baseVal.value, l.y2.baseVal.value) < d(s, l.x2.baseVal.value, l.y2.baseVal.value),
                  l.dataset.source];
        });""")
    assert all(closer for closer, _ in ends)
    assert {source for _, source in ends if source == ids["hub"]} == {ids["hub"]}
    boxes = browser.execute_script("""
        return [...document.querySelectorAll('#graph text')].filter((t) => t.style.display !== 'none')
          .map((t) => { const b = t.getBBox(); return [b.x, b.y, b.width, b.height]; });""")
    assert len(boxes) >= 6  # most nodes keep a label
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            apart = a[0] + a[2] <= b[0] + 0.5 or b[0] + b[2] <= a[0] + 0.5 or a[1] + a[3] <= b[1] + 0.5 \
                or b[1] + b[3] <= a[1] + 0.5
            assert apart, (a, b)
    counts = browser.find_element(By.CSS_SELECTOR, "#view .row .muted").text
    assert counts.startswith("10 memories, 9 edges")
    browser.find_element(By.ID, "graph").screenshot(str(shots / "graph-depth2.png"))


def test_states_and_counts_read_truly(browser, seeded, shots) -> None:
    store, ids = seeded
    go(browser, f"#/memory/{ids['old']}")
    assert browser.find_element(By.ID, "state").text == "superseded"
    chain = browser.find_element(By.ID, "chain").text
    assert "superseded" in chain and "expired" not in chain
    assert "Superseded: recall shows" in browser.find_element(By.ID, "view").text
    browser.save_screenshot(str(shots / "memory-superseded.png"))
    go(browser, "#/browse")
    cards = {c.get_attribute("data-memory-id"): c.text for c in browser.find_elements(By.CSS_SELECTOR, "#memory-list article")}
    assert "superseded" in cards[ids["old"]] and "superseded" not in cards[ids["new"]]
    browser.execute_script("document.getElementById('memory-list').scrollIntoView()")
    browser.save_screenshot(str(shots / "browse-states.png"))
    go(browser, "#/graph")
    hubs = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#hubs li")]
    assert any(text.endswith("1 edge") for text in hubs), hubs  # not "1 edges"
    assert not any(text.endswith(" 1 edges") for text in hubs)
    go(browser, "#/search?query=who+is+my+physio&state_mode=history&limit=5")
    cards = {c.get_attribute("data-memory-id"): c.text for c in browser.find_elements(By.CSS_SELECTOR, "#results article")}
    assert "superseded" in cards[ids["old"]] and "superseded" not in cards[ids["new"]]
    go(browser, "#/search?query=bike+shop+gears&limit=1")
    assert browser.find_element(By.ID, "result-count").text.startswith("1 result")
