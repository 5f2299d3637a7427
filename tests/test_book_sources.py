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
