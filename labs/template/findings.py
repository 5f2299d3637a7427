"""What a template run found, as typed values: the numbers and yes/no answers its page and
its claim tests read (the page formats them; the tests assert them).

A lab's findings are computed from its recorded run and nothing else, with the run's
parameters read as the lab's own dataclass. Replace these with your lab's.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from labs.records import RecordedRun
from labs.template.params import Parameters


@dataclass(frozen=True)
class Findings:
    params: Parameters
    files: int  # files the run wrote
    largest_error_bytes: float  # the largest gap between a file's size and the model's
    every_size_as_modelled: bool  # each file is exactly blocks x block size


def sizes(run: RecordedRun) -> pd.DataFrame:
    """Measured and modelled size per file."""
    table = run.results.pivot_table(index="blocks", columns="metric", values="value")
    return table.reset_index()


def findings(run: RecordedRun) -> Findings:
    table = sizes(run)
    error = (table["file_bytes"] - table["model_bytes"]).abs()
    return Findings(params=Parameters.of(run),
                    files=len(table), largest_error_bytes=float(error.max()),
                    every_size_as_modelled=bool((error == 0).all()))
