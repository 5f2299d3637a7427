"""Hand a page's computed figures to MyST (`{glue:text}` in the text), in one call, and read
back what a build glued.

    glue_all(page.figures(run))   # every number the text quotes, computed from the run
    glued_values(Path("_build/jupyter_execute"))   # page -> key -> text, after a build
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from myst_nb import glue


def glue_all(figures: dict[str, object]) -> None:
    for name, value in figures.items():
        glue(name, value, display=False)


def glued_values(executed: Path) -> dict[str, dict[str, str]]:
    """page -> key -> the text a build glued under it (charts, tables and widgets left out),
    from myst-nb's *.glue.json files under `executed` (the build's jupyter_execute folder)."""
    pages = {}
    for path in sorted(executed.rglob("*.glue.json")):
        page = path.relative_to(executed).as_posix().removesuffix(".glue.json")
        values = {}
        for key, output in json.loads(path.read_text()).items():
            data = output.get("data", {})
            if set(data) - {"text/plain"}:
                continue  # a chart, a table or a widget
            text = data.get("text/plain", "")
            try:
                text = str(ast.literal_eval(text))
            except (ValueError, SyntaxError):
                pass
            values[key] = text
        pages[page] = values
    return pages
