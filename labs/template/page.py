"""What a page would show of a template run: figures (formatted findings), a chart with
the model, provenance, the panel, and the headline that sets a reader's run beside it."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.records import RecordedRun
from labs.template.findings import findings, sizes
from labs.template.params import Parameters


def figures(run: RecordedRun) -> dict[str, str]:
    """The numbers the page quotes, formatted from the run's findings."""
    found = findings(run)
    return {"files": nt.count(found.files),
            "largest_error_bytes": nt.count(found.largest_error_bytes)}


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


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: each file's size, with the model's."""
    from labs.book.compare import headline_table

    return headline_table([{"measure": "file size", "config": f"{row.blocks:.0f} blocks",
                            "value": row.file_bytes, "unit": "bytes", "better": "neither",
                            "model": row.model_bytes} for row in sizes(run).itertuples()])
