"""The book builds with -W and execution errors fatal, and works offline in a real browser.

The browser test opens the built pages in Debian's chromium (headless) with every host
but 127.0.0.1 unresolvable, fails on any console error or outside request, checks that
every chart rendered, moves a control and checks that the chart changed.
"""

import functools
import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from html import unescape
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


def test_exercises_are_numbered_within_their_chapter(built_site):
    """Exercise 3.2 is the second exercise of chapter 3, on its explanation or lab page."""
    from labs.book.guide import toc_chapters

    numbered = 0
    for number, pages in enumerate(toc_chapters(), start=1):
        for page in pages:
            found = re.findall(r"Exercise (\d+)\.(\d+)", (built_site / f"{page}.html").read_text())
            assert {int(chapter) for chapter, _ in found} <= {number}, (page, found[:3])
            numbered += len(found)
    assert numbered >= 20


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


CHART_DIV = '<div class="labs-chart"'
CONTROL_SCRIPT = """
    const chart = document.querySelectorAll('.labs-chart')[arguments[0]];
    return [...chart.querySelectorAll('.vega-bind')].map(b => {
        const input = b.querySelector('input, select');
        return {label: b.querySelector('.vega-bind-name').textContent.trim(),
                kind: input.tagName === 'SELECT' ? 'select' : input.type,
                value: input.value,
                options: input.tagName === 'SELECT' ? [...input.options].map(o => o.value)
                         : [input.min, input.max]};
    });"""
# Controls that may rightly leave a chart unchanged on their own, and why.
NO_OP_CONTROLS = {
    # With the default zone-outage chance of 0, the number of zones cannot matter;
    # test_zones_do_not_matter_without_zone_outages checks exactly that.
    ("Unavailability vs per-node", "AZs Z"),
}


def page_url(mode: str, site_url: str, site: Path, page: str) -> str:
    return f"{site_url}/{page}" if mode == "http" else (site / page).resolve().as_uri()


def declared_charts(site: Path, page: str) -> int:
    """How many charts the built page carries (what the browser must draw)."""
    return (site / page).read_text().count(CHART_DIV)


def open_page(browser, url, expected=None):
    browser.get(url)
    deadline = time.monotonic() + 60
    state = {}
    while time.monotonic() < deadline:
        state = browser.execute_script("""
            const charts = [...document.querySelectorAll('.labs-chart')];
            return {total: charts.length, ready: document.readyState,
                    rendered: charts.filter(c => c.dataset.rendered === 'yes').length};""")
        if state["ready"] == "complete" and state["rendered"] == state["total"] and (
                expected is None or state["total"] == expected):
            return state
        time.sleep(0.25)
    raise AssertionError(f"charts did not all render on {url}: {state}")


def severe_errors(browser):
    return [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]


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


PAGES = [f"{name}.html" for name in toc_files()]


@pytest.mark.parametrize("mode", ["http", "file"])
@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_offline_from_http_and_from_file(browser, site_url, built_site,
                                                            figures, mode, page):
    expected = declared_charts(built_site, page)
    state = open_page(browser, page_url(mode, site_url, built_site, page), expected)
    assert severe_errors(browser) == []
    assert outside_requests(browser) == []
    # Every chart drew marks into an SVG, in place of its static image.
    marks = browser.execute_script("""
        return [...document.querySelectorAll('.labs-chart')].map(c => [
            c.querySelectorAll('svg path, svg rect, svg line, svg text').length,
            c.querySelectorAll('img.labs-chart-static').length]);""")
    assert len(marks) == state["total"] == expected
    assert all(count > 10 and still == 0 for count, still in marks), marks
    if expected:
        figures(f"{page} from {mode}: {state['rendered']}/{expected} charts rendered")


WIDE_TABLES = """
    const column = document.querySelector('article.bd-article');
    const width = column.getBoundingClientRect().width;
    return [...column.querySelectorAll('table')]
        .filter(t => t.getBoundingClientRect().width > width + 1)
        .map(t => t.innerText.slice(0, 80));"""


@pytest.mark.parametrize("page", PAGES)
def test_no_table_is_wider_than_the_text_column(browser, site_url, page):
    """At a 1280 px window (the browser fixture's), every table fits the text column."""
    browser.get(f"{site_url}/{page}")
    assert browser.execute_script(WIDE_TABLES) == [], page


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
    time.sleep(0.3)


def svg_once_changed(browser, index, before: str, timeout_s: float = 10) -> str:
    """The chart's drawing once it differs from `before`, or as it is after `timeout_s` (Vega
    redraws asynchronously, later on a busy machine)."""
    deadline = time.monotonic() + timeout_s
    svg = chart_svg(browser, index)
    while svg == before and time.monotonic() < deadline:
        time.sleep(0.2)
        svg = chart_svg(browser, index)
    return svg


def chart_index(browser, title_fragment):
    titles = browser.execute_script(
        "return [...document.querySelectorAll('.labs-chart')].map(c => c.dataset.chartTitle);")
    return next(i for i, t in enumerate(titles) if title_fragment in t)


@pytest.mark.parametrize("mode", ["http", "file"])
@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("book/")])
def test_every_control_moves_its_chart(browser, site_url, built_site, mode, page):
    if not declared_charts(built_site, page):
        return
    state = open_page(browser, page_url(mode, site_url, built_site, page))
    titles = browser.execute_script(
        "return [...document.querySelectorAll('.labs-chart')].map(c => c.dataset.chartTitle);")
    moved = 0
    for index in range(state["total"]):
        for control in browser.execute_script(CONTROL_SCRIPT, index):
            before = chart_svg(browser, index)
            values = [v for v in control["options"] if v != control["value"]]
            changed = False
            no_op = any(titles[index].startswith(title) and control["label"] == label
                        for title, label in NO_OP_CONTROLS)
            for value in values:
                set_control(browser, index, control["label"], value)
                if not (changed or no_op):
                    changed = svg_once_changed(browser, index, before) != before
            set_control(browser, index, control["label"], control["value"])
            moved += 1
            assert severe_errors(browser) == [], (page, control["label"])
            if not no_op:
                assert changed, f"{page}: moving {control['label']!r} changed nothing"
    assert moved or not browser.execute_script("return document.querySelectorAll("
                                               "'.vega-bind').length")


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
    assert svg_once_changed(browser, index, before) != before
    assert severe_errors(browser) == []


def test_zones_do_not_matter_without_zone_outages(browser, site_url):
    open_page(browser, f"{site_url}/book/quorum/explain.html")
    index = chart_index(browser, "Unavailability vs per-node")
    before = chart_svg(browser, index)
    set_control(browser, index, "AZs Z", "1")
    assert chart_svg(browser, index) == before


def test_without_scripts_every_chart_shows_its_static_image(built_site):
    """Where scripts cannot run, the image drawn at build time stands in for each chart."""
    for page in PAGES:
        text = (built_site / page).read_text()
        charts = text.count(CHART_DIV)
        assert text.count('<img class="labs-chart-static"') == charts, page


def visible_text(html: str) -> str:
    """The page's prose and tables as a reader sees them (no scripts, styles or code)."""
    for tag in ("script", "style", "pre", "code"):
        html = re.sub(rf"<{tag}\b.*?</{tag}>", " ", html, flags=re.S | re.I)
    return unescape(re.sub(r"<[^>]+>", " ", html))


def table_columns(html: str) -> list[list[str]]:
    """Every column of every HTML table, as the cells' text."""
    columns = []
    for table in re.findall(r"<table\b.*?</table>", html, flags=re.S):
        rows = [[unescape(re.sub(r"<[^>]+>", "", cell)).strip()
                 for cell in re.findall(r"<td\b[^>]*>(.*?)</td>", row, flags=re.S)]
                for row in re.findall(r"<tr\b.*?</tr>", table, flags=re.S)]
        rows = [row for row in rows if row]
        width = max((len(row) for row in rows), default=0)
        columns += [[row[i] for row in rows if i < len(row)] for i in range(width)]
    return columns


@pytest.mark.parametrize("page", PAGES)
def test_rendered_text_has_no_nan_none_or_float_booleans(built_site, page):
    html = (built_site / page).read_text()
    text = visible_text(html)
    assert not re.search(r"\b(NaN|nan|None|True|False)\b", text), re.search(
        r".{0,60}\b(NaN|nan|None|True|False)\b.{0,60}", text).group(0)
    for column in table_columns(html):
        if len(column) >= 2:
            assert not set(column) <= {"0.0", "1.0"}, (
                f"{page}: a yes/no column shown as numbers: {column}")


@pytest.mark.parametrize("page", PAGES)
def test_no_page_shows_markdown_source(built_site, page):
    # A directive MyST did not read (a fence it took for text) shows its source, glue roles
    # included, and builds without an error.
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", (built_site / page).read_text(),
                  flags=re.S | re.I)
    text = unescape(re.sub(r"<[^>]+>", " ", html))  # code blocks too: that is where it lands
    source = re.search(r".{0,60}(\{glue:text\}|\{code-cell\}|\{admonition\}|\{term\}).{0,60}",
                       text)
    assert source is None, f"{page}: {source.group(0) if source else ''}"


UNITS = r"(?:%|ms|µs|s|B|KiB|MiB|GiB|MiB/s)"


@pytest.mark.parametrize("page", PAGES)
def test_no_number_on_a_page_carries_its_unit_twice(built_site, page):
    # A glued number that carries its unit (labs/book/number_text.py) beside the same unit
    # written in the page reads "12 % %" or "2.5 ms ms".
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", (built_site / page).read_text(),
                  flags=re.S | re.I)
    text = " ".join(unescape(re.sub(r"<[^>]+>", "", html)).split())
    doubled = re.search(rf".{{0,40}}\d {UNITS} {UNITS}(?![\w/]).{{0,40}}", text)
    assert doubled is None, f"{page}: {doubled.group(0) if doubled else ''}"
