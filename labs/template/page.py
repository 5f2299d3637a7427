"""What a page would show of a template run: figures, a chart with the model, provenance."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.records import RecordedRun
from labs.template.params import Parameters


def sizes(run: RecordedRun) -> pd.DataFrame:
    """Measured and modelled size per file."""
    table = run.results.pivot_table(index="blocks", columns="metric", values="value")
    return table.reset_index()


def figures(run: RecordedRun) -> dict[str, str]:
    table = sizes(run)
    error = (table["file_bytes"] - table["model_bytes"]).abs().max()
    return {"files": str(len(table)), "largest_error_bytes": f"{error:.0f}"}


def chart(run: RecordedRun) -> alt.LayerChart:
    table = sizes(run)
    measured = alt.Chart(table).mark_point(size=90).encode(
        x=alt.X("blocks:Q", title="blocks written"),
        y=alt.Y("file_bytes:Q", title="file size (bytes)"))
    model = alt.Chart(table).mark_line(strokeDash=[4, 3], color="#D55E00").encode(
        x="blocks:Q", y="model_bytes:Q")
    return alt.layer(model, measured).properties(
        title="File size: measured (points) and model (dashed)")


def provenance(run: RecordedRun) -> pd.DataFrame:
    return run_summary(run)


def panel() -> LabPanel:
    return LabPanel(Parameters, fields=("profile", "block_kib"), chart=chart, needs_root=True)
