"""The book builds with -W and execution errors fatal, and works offline in a real browser.

The browser test opens the built pages in Debian's chromium (headless) with every host
but 127.0.0.1 unresolvable, fails on any console error or outside request, checks that
every chart rendered, moves a control and checks that the chart changed.
"""

import functools
import http.server
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, toc_files

from labs.book.build import build_command

SITE = PROJECT_ROOT / "_build" / "html"
PAGE_BUDGET_BYTES = 1_500_000
CHART_PAGES = ["book/quorum/explain.html", "book/quorum/lab.html", "book/write-mostly/lab.html",
               "book/torn-pages/lab.html"]


@pytest.fixture(scope="session")
def built_site():
    started = time.monotonic()
    command = build_command()
    command[0] = str(Path(sys.executable).with_name("jupyter-book"))
    result = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True,
                            timeout=1200)
    print(f"book build: {time.monotonic() - started:.1f} s")
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    return SITE


def test_every_toc_page_was_built(built_site):
    for name in toc_files():
        assert (built_site / f"{name}.html").is_file(), name


def test_pages_stay_under_budget(built_site):
    sizes = {p.relative_to(built_site).as_posix(): p.stat().st_size
             for p in built_site.rglob("*.html")}
    largest = max(sizes, key=sizes.get)
    print(f"largest page: {largest} {sizes[largest] / 1e6:.2f} MB")
    assert sizes[largest] < PAGE_BUDGET_BYTES


def test_vega_is_served_locally_at_the_version_altair_emits(built_site):
    import altair as alt

    bundle = built_site / "_static" / "vega-bundle.js"
    assert bundle.stat().st_size > 100_000
    for page in CHART_PAGES:
        html = (built_site / page).read_text()
        assert "_static/vega-bundle.js" in html
        assert "cdn.jsdelivr.net" not in html
        assert f"vega-lite/{alt.SCHEMA_VERSION}.json" in html  # the spec's own $schema


def test_static_panel_shows_the_command_not_a_dead_widget(built_site):
    html = (built_site / "book/quorum/lab.html").read_text()
    assert "labs-panel-static" in html
    assert ".venv/bin/python -m labs run quorum --host local --profile full --seed 2017" in html
    assert "application/vnd.jupyter.widget-view+json" not in html


def test_exercise_solutions_are_hidden_in_dropdowns(built_site):
    html = (built_site / "book/quorum/lab.html").read_text()
    assert html.count('class="solution dropdown') >= 4


# ------------------------------------------------------------------------------------------
# Real browser, network cut off
# ------------------------------------------------------------------------------------------


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site_url(built_site):
    handler = functools.partial(QuietHandler, directory=str(built_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium")
    driver_path = shutil.which("chromedriver")
    assert chromium and driver_path, (
        "chromium and chromium-driver are needed: scripts/system-packages.sh test installs them")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1600",
                 # The network is unreachable: no name resolves except the local server.
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                 f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    yield driver
    driver.quit()


def open_page(browser, url):
    browser.get(url)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = browser.execute_script("""
            const charts = [...document.querySelectorAll('.labs-chart')];
            return {total: charts.length,
                    rendered: charts.filter(c => c.dataset.rendered === 'yes').length};""")
        if state["total"] and state["rendered"] == state["total"]:
            return state
        time.sleep(0.25)
    raise AssertionError(f"charts did not all render on {url}: {state}")


def outside_requests(browser):
    urls = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            url = message["params"]["request"]["url"]
            scheme, _, rest = url.partition("://")
            host = rest.split("/", 1)[0].split(":", 1)[0]
            # chrome:// and data: are the browser's own; anything on the network must be local
            if scheme in ("http", "https", "ws", "wss") and host != "127.0.0.1":
                urls.append(url)
    return urls


@pytest.mark.parametrize("page", CHART_PAGES)
def test_page_renders_offline_without_errors(browser, site_url, page):
    state = open_page(browser, f"{site_url}/{page}")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], errors
    assert outside_requests(browser) == []
    # Every chart drew marks into an SVG.
    marks = browser.execute_script("""
        return [...document.querySelectorAll('.labs-chart')].map(
            c => c.querySelectorAll('svg path, svg rect, svg line, svg text').length);""")
    assert len(marks) == state["total"] and all(m > 10 for m in marks), marks


def chart_svg(browser, index):
    return browser.execute_script(
        "return document.querySelectorAll('.labs-chart')[arguments[0]]"
        ".querySelector('svg').outerHTML;", index)


def set_control(browser, index, label, value):
    """Set the control named `label` under chart `index`, as a reader would, and fire events."""
    taken = browser.execute_script("""
        const chart = document.querySelectorAll('.labs-chart')[arguments[0]];
        const bind = [...chart.querySelectorAll('.vega-bind')].find(
            b => b.querySelector('.vega-bind-name').textContent.trim() === arguments[1]);
        const input = bind.querySelector('input, select');
        input.value = arguments[2];
        input.dispatchEvent(new Event('input', {bubbles: true}));
        input.dispatchEvent(new Event('change', {bubbles: true}));
        return input.value;""", index, label, value)
    assert taken == value, f"control {label!r} did not take {value!r} (has {taken!r})"
    time.sleep(0.5)


def chart_index(browser, title_fragment):
    titles = browser.execute_script(
        "return [...document.querySelectorAll('.labs-chart')].map(c => c.dataset.chartTitle);")
    return next(i for i, t in enumerate(titles) if title_fragment in t)


@pytest.mark.parametrize(("title", "setup", "label", "value"), [
    ("Which (W, R) are safe", [], "copies N", "3"),
    ("Unavailability vs per-node", [], "write quorum W", "5"),
    ("Unavailability vs per-node", [], "p(AZ out)", "0.01"),
    # Zones only matter once zones can fail: with p(AZ out) = 0 the chart must not move.
    ("Unavailability vs per-node", [("p(AZ out)", "0.01")], "AZs Z", "1"),
    ("K-th of 6", [], "acknowledgements waited for", "5"),
    ("Repair time decides", [], "mean time between failures", "30"),
])
def test_moving_a_control_changes_the_chart(browser, site_url, title, setup, label, value):
    open_page(browser, f"{site_url}/book/quorum/explain.html")
    index = chart_index(browser, title)
    for setup_label, setup_value in setup:
        set_control(browser, index, setup_label, setup_value)
    before = chart_svg(browser, index)
    set_control(browser, index, label, value)
    after = chart_svg(browser, index)
    assert before != after
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_zones_do_not_matter_without_zone_outages(browser, site_url):
    open_page(browser, f"{site_url}/book/quorum/explain.html")
    index = chart_index(browser, "Unavailability vs per-node")
    before = chart_svg(browser, index)
    set_control(browser, index, "AZs Z", "1")
    assert chart_svg(browser, index) == before
