"""Every chapter opens as a notebook (jupytext) with the python3 kernel."""

import jupytext
import pytest
from conftest import PROJECT_ROOT, toc_files

MAX_CELL_LINES = 10  # lines of code per cell (blank lines and comments not counted)


def code_pages():
    return [name for name in toc_files()
            if "{code-cell}" in (PROJECT_ROOT / f"{name}.md").read_text()]


def test_the_book_has_pages_with_code():
    assert "book/quorum/explain" in code_pages() and "book/quorum/lab" in code_pages()


@pytest.mark.parametrize("name", code_pages())
def test_page_opens_as_a_notebook(name):
    notebook = jupytext.read(PROJECT_ROOT / f"{name}.md")
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    assert any(cell.cell_type == "code" for cell in notebook.cells)
    # Thin notebooks: set up, call, chart. Shared code lives in labs/, where it is tested.
    for cell in notebook.cells:
        if cell.cell_type == "code":
            code = [line for line in cell.source.splitlines()
                    if line.strip() and not line.lstrip().startswith("#")]
            assert len(code) <= MAX_CELL_LINES, cell.source[:80]
