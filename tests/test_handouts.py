"""The handouts (book/appendix/handouts/), printed as an instructor prints them: headless
Chromium's own print to PDF, on A4 and on Letter paper.

Asserted: each handout prints on one sheet of either paper, with its chart drawn; the print
stylesheet leaves out the site's navigation and the charts' menus, and leaves out the
theme's list of sections on a handout only; each handout's question and prediction are the
chapter page's own (included from it, not copied).
"""

import base64
import re

import pytest
from conftest import PROJECT_ROOT, toc_files
from selenium.webdriver.common.print_page_options import PrintOptions
from test_book import open_page

HANDOUTS = [name for name in toc_files() if name.startswith("book/appendix/handouts/")]
PAPER_CM = {"A4": (21.0, 29.7), "Letter": (21.59, 27.94)}
# The chapter page each handout includes its question and prediction from.
CHAPTER_OF = {"write-path": "power-loss", "quorums": "quorum"}


def printed_pages(browser, paper: str) -> int:
    """Sheets the open page prints on (Chromium's PDF: one /Type /Page object per sheet)."""
    options = PrintOptions()
    options.page_width, options.page_height = PAPER_CM[paper]
    pdf = base64.b64decode(browser.print_page(options))
    return len(re.findall(rb"/Type\s*/Page[^s]", pdf))


def shown_in_print(browser, selector: str) -> list[bool]:
    """For each element `selector` finds, whether it is displayed when the page prints."""
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    try:
        return browser.execute_script(
            "return [...document.querySelectorAll(arguments[0])]"
            ".map(e => getComputedStyle(e).display !== 'none');", selector)
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})


def admonition_text(browser, title: str) -> str:
    return browser.execute_script("""
        const box = [...document.querySelectorAll('.admonition')].find(
            b => b.querySelector('.admonition-title').textContent.trim() === arguments[0]);
        const body = [...box.querySelectorAll('p')].slice(1);
        return body.map(p => p.textContent.trim()).join(' ');""", title)


def test_there_is_a_handout_for_every_chapter():
    chapters = [name for name in toc_files() if name.endswith("/explain")]
    assert len(HANDOUTS) == len(chapters) == 7


@pytest.mark.parametrize("handout", HANDOUTS)
def test_each_handout_prints_on_one_sheet_with_its_chart(browser, site_url, built_site,
                                                         handout):
    state = open_page(browser, f"{site_url}/{handout}.html", expected=1)
    assert state["rendered"] == 1, state
    for paper in PAPER_CM:
        assert printed_pages(browser, paper) == 1, f"{handout} takes more than one {paper} sheet"
    assert not any(shown_in_print(browser, ".bd-sidebar-primary, .bd-header, .vega-bindings"))
    assert not any(shown_in_print(browser, "#jb-print-toc"))
    assert all(shown_in_print(browser, ".labs-chart svg, #jb-print-docs-body h1"))


def test_a_chapter_page_still_prints_its_list_of_sections(browser, site_url, built_site):
    open_page(browser, f"{site_url}/book/devices/explain.html")
    assert shown_in_print(browser, "#jb-print-toc") == [True]
    assert not any(shown_in_print(browser, ".bd-sidebar-primary, .vega-bindings"))


@pytest.mark.parametrize("handout", HANDOUTS)
def test_each_handout_asks_its_chapters_own_question_and_prediction(browser, site_url,
                                                                     built_site, handout):
    name = handout.rsplit("/", 1)[1]
    chapter = f"book/{CHAPTER_OF.get(name, name)}/explain"
    assert (PROJECT_ROOT / f"{chapter}.md").exists(), chapter
    open_page(browser, f"{site_url}/{chapter}.html")
    question = admonition_text(browser, "The question")
    prediction = admonition_text(browser, "Predict first")
    open_page(browser, f"{site_url}/{handout}.html")
    assert admonition_text(browser, "The question") == question != ""
    # The chapter's box ends by pointing further down its page; the handout's asks for the
    # answer on the sheet instead.
    assert admonition_text(browser, "Predict first").startswith(
        prediction.rsplit("Decide before you read on", 1)[0].strip())
