"""The book builds with -W and execution errors fatal, and works offline in a real browser.

The browser test opens the built pages in Debian's chromium (headless) with every host
but 127.0.0.1 unresolvable, fails on any console error or outside request, and checks that
every chart rendered (test_book_controls.py moves every control). The build, the local
server and the browser are conftest's fixtures.
"""

import json
import re
import time
from html import unescape
from pathlib import Path

import pytest
from conftest import toc_files

from labs.book.glue import glued_values

PAGE_BUDGET_BYTES = 1_500_000
CHART_PAGES = ["book/quorum/explain.html", "book/quorum/lab.html", "book/write-mostly/lab.html",
               "book/torn-pages/lab.html"]


def test_every_toc_page_was_built(built_site):
    for name in toc_files():
        assert (built_site / f"{name}.html").is_file(), name


# Lists of a lab's own settings, glued as one value: the sizes a run tried ("100, 1,024 and
# 4,096"). Every other glued value is one number (with its unit) or a name.
GLUED_LISTS = {"block_sizes", "row_sizes"}
TWO_NUMBERS = re.compile(r"\d\S*(?: [^\s\d]+)? (?:to|and) \S*\d")  # "2.3 to 8", "0.5 ms and 0.8"


def glued_texts(built_site) -> dict[str, str]:
    """page/key -> the text glued under it (charts and tables left out), from the build."""
    return {f"{page}/{key}": text
            for page, values in glued_values(built_site.parent / "jupyter_execute").items()
            for key, text in values.items()}


def test_the_two_numbers_check_finds_a_range_glued_as_one_value():
    assert TWO_NUMBERS.search("2.3 to 8.0") and TWO_NUMBERS.search("1.39 and 1.34")
    assert TWO_NUMBERS.search("0.5 ms and 0.8")
    assert not TWO_NUMBERS.search("12.5 %") and not TWO_NUMBERS.search("6.1.0-50-amd64")


def test_every_glued_value_is_one_number(built_site):
    texts = glued_texts(built_site)
    assert len(texts) > 500  # the build's glue was found
    phrases = [f"{key}: {text}" for key, text in texts.items()
               if TWO_NUMBERS.search(text) and key.rsplit("/", 1)[1] not in GLUED_LISTS]
    assert phrases == [], "glue each number apart, the words between them in the page:\n" \
        + "\n".join(phrases)


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


CHART_DIV = '<div class="labs-chart"'


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
