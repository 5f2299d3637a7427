"""Hand a page's computed figures to MyST (`{glue:text}` in the text), in one call.

    glue_all(page.figures(run))   # every number the text quotes, computed from the run
"""

from __future__ import annotations

from myst_nb import glue


def glue_all(figures: dict[str, object]) -> None:
    for name, value in figures.items():
        glue(name, value, display=False)
