"""`make book` after a new run: the pages that read that lab's runs show it, the others stay.

Tried as a reader does it, in a small copy of the book (the quorum lab page, which reads the
quorum runs, and a page that draws the write path's model, which reads none): build, record a
quorum run with the lab's own command, build again, look at the pages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PROJECT_ROOT, run_labs, small_book

from labs import records
from labs.book import sphinx_freshness
from labs.book.build import build_command

PAGES = ("book/quorum/lab.md", "book/model.md")
MODEL_PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A model, no runs

```{code-cell} ipython3
from labs.power_loss import write_path_page as page
page.loss_chart()
```
"""


def build(book: Path, env: dict) -> set[str]:
    """Build the small book; return the pages it executed."""
    command = build_command(book)
    command[0] = str(Path(sys.executable).with_name("jupyter-book"))
    result = subprocess.run(command, cwd=book, capture_output=True, text=True, timeout=900,
                            env={**os.environ, **env})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    return {Path(m).relative_to(book).as_posix()
            for m in re.findall(r"^(\S+\.md): Executing notebook", output, flags=re.M)}


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    base = tmp_path_factory.mktemp("incremental")
    runs = base / "runs"
    shipped = records.shipped_run("quorum")
    shutil.copytree(shipped.path, runs / "quorum" / shipped.run_id)
    shutil.copy(shipped.path.parent / records.SHIPPED_FILE, runs / "quorum")
    env = {"LABS_RUNS_DIR": str(runs), "LABS_INVENTORY": str(base / "hosts.toml")}
    (base / "hosts.toml").write_text("")
    book = small_book(base / "book", ["quorum/lab.md", "model.md"], {"model.md": MODEL_PAGE})
    return {"book": book, "env": env}


def test_a_new_run_re_executes_only_the_pages_that_read_its_lab(reader):
    book, env = reader["book"], reader["env"]
    assert build(book, env) == set(PAGES)  # the first build executes everything
    assert build(book, env) == set()  # nothing changed: nothing runs again
    made = run_labs("run", "quorum", "--quick", "--seed", "31", env=env)
    assert made.returncode == 0, made.stderr
    run_id = Path(made.stdout.strip().splitlines()[-1].split(": ", 1)[1]).name
    assert build(book, env) == {"book/quorum/lab.md"}
    page = (book / "_build" / "html" / "book" / "quorum" / "lab.html").read_text()
    assert run_id in page, "the quorum page does not show the reader's new run"


def test_which_pages_a_changed_area_makes_outdated():
    quorum_page = (PROJECT_ROOT / "book/quorum/lab.md").read_text()
    model_page = MODEL_PAGE
    glossary = (PROJECT_ROOT / "book/appendix/glossary.md").read_text()
    assert sphinx_freshness.page_is_outdated(quorum_page, {"runs:quorum"})
    assert not sphinx_freshness.page_is_outdated(quorum_page, {"runs:drbd"})
    assert not sphinx_freshness.page_is_outdated(model_page, {"runs:quorum"})
    assert sphinx_freshness.page_is_outdated(model_page, {sphinx_freshness.CODE_AREA})
    assert not sphinx_freshness.page_is_outdated(glossary, {sphinx_freshness.CODE_AREA})


def test_a_changed_area_is_found_by_its_fingerprint():
    before = {"code": "a", "runs:quorum": "b", "runs:drbd": "c"}
    now = {"code": "a", "runs:quorum": "B", "runs:caches": "d"}
    assert sphinx_freshness.changed_areas(before, now) == {"runs:quorum", "runs:drbd",
                                                          "runs:caches"}
