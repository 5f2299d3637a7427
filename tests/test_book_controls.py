"""Every control of every chart moves its chart, in the built book, in a real browser.

Split from test_book.py so that `make test-fast` (whole files per worker) runs these beside
the other browser tests; the book is built once in the session (conftest's built_site)
and both read it.
"""

import time

import pytest
from test_book import PAGES, declared_charts, open_page, page_url, severe_errors

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


def chart_titles(browser) -> list[str]:
    return browser.execute_script(
        "return [...document.querySelectorAll('.labs-chart')].map(c => c.dataset.chartTitle);")


def chart_index(browser, title_fragment):
    return next(i for i, t in enumerate(chart_titles(browser)) if title_fragment in t)


@pytest.mark.parametrize("page", [p for p in PAGES if p.startswith("book/")])
def test_every_control_moves_its_chart(browser, site_url, built_site, page):
    """Opened as a file, the stricter of the two ways: a control is a Vega signal inside the
    page, which asks the server for nothing once its charts have rendered, and
    test_book.test_every_page_renders_offline_from_http_and_from_file renders every page
    both ways."""
    if not declared_charts(built_site, page):
        return
    state = open_page(browser, page_url("file", site_url, built_site, page))
    titles = chart_titles(browser)
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
