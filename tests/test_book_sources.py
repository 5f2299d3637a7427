"""The pages' Markdown, read as MyST reads it: mistakes that build without an error but show
the reader raw source."""

from __future__ import annotations

import re

import pytest
from conftest import PROJECT_ROOT

PAGES = sorted((PROJECT_ROOT / "book").rglob("*.md"))
# A fence of backticks whose info string holds a backtick is no fence at all (CommonMark):
# the directive below it is shown as text, and its closing fence opens a code block.
FENCE_WITH_BACKTICK_IN_INFO = re.compile(r"^(`{3,})\{[\w-]+\}.*`")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(PROJECT_ROOT)))
def test_no_directive_fence_has_a_backtick_in_its_title(page):
    bad = [f"line {number}: {line}" for number, line in
           enumerate(page.read_text().splitlines(), start=1)
           if FENCE_WITH_BACKTICK_IN_INFO.match(line)]
    assert bad == [], bad


def test_the_check_finds_a_backtick_in_a_directive_title():
    assert FENCE_WITH_BACKTICK_IN_INFO.match("````{admonition} Details: with `off`")
    assert not FENCE_WITH_BACKTICK_IN_INFO.match("````{admonition} Details: with off")


def glossary_terms(text: str) -> list[str]:
    """The terms of the glossary directive, in the order they appear (a term starts at the
    line's first column; its definition is indented)."""
    body = text.split("```{glossary}\n", 1)[1].split("\n```", 1)[0]
    return [line for line in body.splitlines() if line and not line.startswith(" ")]


def test_the_glossary_is_in_alphabetical_order():
    # A reader looks a term up by scanning: any term out of place is one they miss.
    terms = glossary_terms((PROJECT_ROOT / "book" / "appendix" / "glossary.md").read_text())
    assert len(terms) > 50
    assert terms == sorted(terms, key=str.lower)


def test_the_order_check_sees_a_misplaced_term():
    text = "```{glossary}\nqcow2\n  a format.\n\nreadahead\n  more.\n\nqueue depth\n  x.\n```"
    terms = glossary_terms(text)
    assert terms == ["qcow2", "readahead", "queue depth"]
    assert terms != sorted(terms, key=str.lower)


GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([A-Za-z0-9_\-]+)`")


def keys_not_written_out(page_text: str, code: str) -> set[str]:
    """The glue keys a page quotes that appear nowhere as a quoted string: not in `code`
    (the labs package's source) nor in the page's own code cells. Such a key is assembled
    (an f-string, a prefix added in a loop), and a search for it finds only one end."""
    quoted = set(GLUE_ROLE.findall(page_text))
    return {key for key in quoted
            if f'"{key}"' not in code and f"'{key}'" not in code
            and f'"{key}"' not in page_text and f"'{key}'" not in page_text}


def test_every_glue_key_is_written_out_where_it_is_made():
    code = "\n".join(path.read_text() for path in (PROJECT_ROOT / "labs").rglob("*.py"))
    assembled = {str(page.relative_to(PROJECT_ROOT)): sorted(keys_not_written_out(
        page.read_text(), code)) for page in PAGES}
    assert {page: keys for page, keys in assembled.items() if keys} == {}


def test_the_written_out_check_finds_an_assembled_key():
    page = "Lost {glue:text}`cut_wb_lost_1` of {glue:text}`acked`.\n"
    code = 'out = {"acked": n}\nfor cut in cuts:\n    out[f"cut_wb_lost_{cut}"] = n\n'
    assert keys_not_written_out(page, code) == {"cut_wb_lost_1"}
