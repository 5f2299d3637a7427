"""The live control panel: parameters, a Run button, progress, then the chart redrawn.

In a notebook with a kernel (JupyterLab, `jupyter lab book/quorum/lab.md`), `LabPanel`
shows ipywidgets controls. On the static site there is no kernel, so the same output
shows the equivalent shell command instead of a dead widget: the panel's display carries
both a widget view and an HTML rendering, and the book's build keeps only the HTML.

A lab provides:

- `parameters`: the controls (IntParameter, FloatParameter, ChoiceParameter);
- `command(values) -> str`: the shell command that does the same run;
- `run(values, progress) -> RecordedRun`: runs it, calling progress(fraction, step_text);
- `chart(run) -> alt.Chart`: draws a recorded run.
"""

from __future__ import annotations

import html
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from labs.errors import LabError


@dataclass(frozen=True)
class IntParameter:
    name: str
    label: str
    value: int
    minimum: int
    maximum: int
    step: int = 1

    def widget(self):
        import ipywidgets as w

        return w.IntSlider(value=self.value, min=self.minimum, max=self.maximum,
                           step=self.step, description=self.label,
                           style={"description_width": "initial"})


@dataclass(frozen=True)
class FloatParameter:
    name: str
    label: str
    value: float
    minimum: float
    maximum: float
    step: float

    def widget(self):
        import ipywidgets as w

        return w.BoundedFloatText(value=self.value, min=self.minimum, max=self.maximum,
                                  step=self.step, description=self.label,
                                  style={"description_width": "initial"})


@dataclass(frozen=True)
class ChoiceParameter:
    name: str
    label: str
    value: Any
    options: tuple

    def widget(self):
        import ipywidgets as w

        return w.Dropdown(options=list(self.options), value=self.value,
                          description=self.label, style={"description_width": "initial"})


Parameter = IntParameter | FloatParameter | ChoiceParameter


class LabPanel:
    """A run panel for one lab (see the module docstring)."""

    def __init__(self, title: str, parameters: list[Parameter],
                 command: Callable[[dict], str],
                 run: Callable[[dict, Callable[[float, str], None]], Any],
                 chart: Callable[[Any], Any]):
        self.title = title
        self.parameters = parameters
        self.command = command
        self.run = run
        self.chart = chart
        self._box = None

    def default_values(self) -> dict:
        return {p.name: p.value for p in self.parameters}

    def static_html(self) -> str:
        """What the static site shows: the shell command that makes the same run."""
        command = html.escape(self.command(self.default_values()))
        return (
            '<div class="labs-panel-static admonition tip">'
            f'<p class="admonition-title">Run this lab yourself: {html.escape(self.title)}</p>'
            "<p>This page was built from a recorded run. To make a new one, open the page "
            "as a notebook with a Python kernel (the controls appear here), or run from a "
            "shell in the project folder:</p>"
            f"<pre><code>{command}</code></pre></div>"
        )

    def build(self):
        """The live ipywidgets panel (only meaningful with a kernel)."""
        import ipywidgets as w

        controls = {p.name: p.widget() for p in self.parameters}
        button = w.Button(description="Run", button_style="primary", icon="play")
        progress = w.FloatProgress(value=0.0, min=0.0, max=1.0, description="idle",
                                   style={"description_width": "initial"})
        command_text = w.HTML()
        output = w.Output()

        def values() -> dict:
            return {name: control.value for name, control in controls.items()}

        def show_command(_=None) -> None:
            try:
                text = self.command(values())
            except LabError as error:
                text = f"(not runnable: {error})"
            command_text.value = f"<code>{html.escape(text)}</code>"

        def report(fraction: float, step: str) -> None:
            progress.value = max(0.0, min(1.0, fraction))
            progress.description = step

        def on_run(_button) -> None:
            button.disabled = True
            output.clear_output()
            try:
                recorded = self.run(values(), report)
                report(1.0, "done")
                with output:
                    from IPython.display import display

                    display(self.chart(recorded))
                    print(f"recorded in {recorded.path}")
            except LabError as error:
                report(0.0, "failed")
                with output:
                    print(f"error: {error}")
            except Exception:  # a live panel must say what broke rather than die silently
                report(0.0, "failed")
                with output:
                    traceback.print_exc()
            finally:
                button.disabled = False

        for control in controls.values():
            control.observe(show_command, names="value")
        button.on_click(on_run)
        show_command()
        self._box = w.VBox([w.HTML(f"<b>{html.escape(self.title)}</b>"),
                            *controls.values(), command_text,
                            w.HBox([button, progress]), output])
        return self._box

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = {"text/html": self.static_html(),
                  "text/plain": self.command(self.default_values())}
        try:
            widget_bundle = self.build()._repr_mimebundle_(include=include, exclude=exclude)
        except Exception:  # no ipywidgets front end: the static rendering is enough
            return bundle
        if isinstance(widget_bundle, tuple):
            widget_bundle = widget_bundle[0]
        bundle.update({k: v for k, v in (widget_bundle or {}).items() if k != "text/plain"})
        return bundle
