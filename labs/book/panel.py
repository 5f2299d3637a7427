"""The live run panel of a lab page: parameters, a Run button, progress, the chart redrawn.

    LabPanel(Parameters, fields=("profile", "seed"), chart=latency_chart, needs_root=True)

In a notebook with a kernel (`jupyter lab book/<topic>/lab.md`) the panel shows ipywidgets
controls built from the lab's parameters dataclass (labs/lab.py: ranges and choices come
from `option(...)`), and its Run button runs exactly the command it shows,
`python -m labs run <lab> ...`, in a subprocess: the same code that made the book's
recorded run makes the reader's, and the panel never imports the host, VM or container
code. The progress bar follows the lab's step lines (labs/progress.py); when the run is
recorded the chart is redrawn from it.

On the static site there is no kernel: the panel's HTML shows that command instead of a
dead widget (the book's build keeps only the HTML).
"""

from __future__ import annotations

import dataclasses
import html
import importlib
import shlex
import subprocess
import sys
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from labs import PROJECT_ROOT
from labs.errors import LabError
from labs.lab import LabParameters
from labs.progress import parse_step_line
from labs.records import RecordedRun, newest_run
from labs.timings import quick_time_note


def shell_command(params: LabParameters, needs_root: bool) -> str:
    """What a reader types in the project folder (the venv's Python; sudo when needed)."""
    python = ".venv/bin/python"
    command = params.command_line().replace("python -m labs", f"{python} -m labs", 1)
    return f"sudo {command}" if needs_root else command


def command_arguments(shell_text: str) -> list[str]:
    """The `run ...` arguments of a shell command made by shell_command (for tests)."""
    words = shlex.split(shell_text)
    return words[words.index("labs") + 1:]


def inline_code(text: str) -> str:
    """Escaped HTML of one line of text, its `backticked` parts as code (a lab's NEEDS names
    commands that way)."""
    parts = html.escape(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: shown as it is
        return html.escape(text)
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


class LabPanel:
    def __init__(self, parameters: type[LabParameters], *, fields: Sequence[str],
                 chart: Callable[[RecordedRun], Any], title: str = "",
                 needs_root: bool = False, defaults: dict[str, Any] | None = None):
        self.parameters = parameters
        self.fields = tuple(fields)
        self.chart = chart
        self.title = title or f"Run the {parameters.LAB} lab"
        self.needs_root = needs_root
        self.defaults = parameters.for_profile(
            (defaults or {}).get("profile"),
            **{k: v for k, v in (defaults or {}).items() if k != "profile"})
        known = {f.name for f in dataclasses.fields(parameters)}
        unknown = set(self.fields) - known
        if unknown:
            raise LabError(f"panel of {parameters.LAB}: no parameter {sorted(unknown)[0]!r}")

    def command(self, values: dict[str, Any] | None = None) -> str:
        values = values or {}
        params = self.parameters.for_profile(
            values.get("profile", self.defaults.profile),
            **{**{f: getattr(self.defaults, f) for f in self.fields if f != "profile"},
               **{k: v for k, v in values.items() if k != "profile"}})
        return shell_command(params, self.needs_root)

    def facts(self) -> list[tuple[str, str]]:
        """What the lab needs, and how long its quick profile took (where it was measured):
        (label, text) pairs, shown under the command."""
        package = importlib.import_module(self.parameters.__module__.rpartition(".")[0])
        host = getattr(self.defaults, "host", "local")
        facts = [("Needs", f"{package.NEEDS}.")]
        took = quick_time_note(self.parameters.LAB, host)
        if took:
            facts.append(("Time", f"with the quick profile (--quick), {took}."))
        return facts

    def facts_html(self) -> str:
        return "".join(f"<p><strong>{label}:</strong> {inline_code(text)}</p>"
                       for label, text in self.facts())

    def static_html(self) -> str:
        """What the static site shows: the shell command that makes the same run, what it
        needs and how long a quick run took."""
        command = html.escape(self.command())
        facts = self.facts_html()
        return (
            '<div class="labs-panel-static admonition tip">'
            f'<p class="admonition-title">Run this lab yourself: {html.escape(self.title)}</p>'
            "<p>This page was built from a recorded run. To make your own, run this in the "
            "project folder (see <em>Set up and run the labs</em> in the appendix), then "
            "rebuild the book; or open this page as a notebook with a Python kernel, where "
            "a control panel appears here.</p>"
            f"<pre><code>{command}</code></pre>{facts}</div>"
        )

    # --- the live panel (only with a kernel) -------------------------------------------

    def _widget(self, name: str) -> Any:
        import ipywidgets as w

        item = next(f for f in dataclasses.fields(self.parameters) if f.name == name)
        meta, value = item.metadata, getattr(self.defaults, name)
        hint = typing.get_type_hints(self.parameters)[name]
        style = {"description_width": "initial"}
        label = name.replace("_", " ")
        if name == "profile":
            return w.Dropdown(options=list(self.parameters.PROFILES), value=value,
                              description=label, style=style)
        if meta.get("choices"):
            return w.Dropdown(options=list(meta["choices"]), value=value, description=label,
                              style=style)
        if hint is bool:
            return w.Checkbox(value=value, description=label, style=style)
        if hint is int:
            return w.BoundedIntText(value=value, min=meta.get("minimum") or 0,
                                    max=meta.get("maximum") or 2**31 - 1, description=label,
                                    style=style)
        if hint is float:
            return w.BoundedFloatText(value=value, min=meta.get("minimum") or 0.0,
                                      max=meta.get("maximum") or 1e12, description=label,
                                      style=style)
        return w.Text(value=str(value), description=label, style=style)

    def build(self) -> Any:
        import ipywidgets as w
        from IPython.display import display

        controls = {name: self._widget(name) for name in self.fields}
        button = w.Button(description="Run", button_style="primary", icon="play")
        progress = w.FloatProgress(value=0.0, min=0.0, max=1.0, description="idle",
                                   style={"description_width": "initial"})
        command_text = w.HTML()
        output = w.Output()

        def values() -> dict[str, Any]:
            return {name: control.value for name, control in controls.items()}

        def show_command(_: object = None) -> None:
            try:
                text = self.command(values())
            except LabError as error:
                text = f"(not runnable: {error})"
            command_text.value = f"<code>{html.escape(text)}</code>"

        def on_run(_: object) -> None:
            button.disabled = True
            output.clear_output()
            try:
                recorded = self.run_command(self.command(values()), progress)
                with output:
                    display(self.chart(recorded))
                    print(f"recorded in {recorded.path}")
            except LabError as error:
                progress.description = "failed"
                with output:
                    print(f"error: {error}")
            finally:
                button.disabled = False

        for control in controls.values():
            control.observe(show_command, names="value")
        button.on_click(on_run)
        show_command()
        return w.VBox([w.HTML(f"<b>{html.escape(self.title)}</b>{self.facts_html()}"),
                       *controls.values(),
                       command_text, w.HBox([button, progress]), output])

    def run_command(self, shell_text: str, progress: Any = None) -> RecordedRun:
        """Run the shown command (sudo -n when it needs root); the run it recorded."""
        argv = [sys.executable, "-m", "labs", *command_arguments(shell_text)]
        if self.needs_root and shell_text.startswith("sudo "):
            argv = ["sudo", "-n", *argv]
        process = subprocess.Popen(argv, cwd=Path(PROJECT_ROOT), stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None
        last = ""
        for line in process.stderr:
            last = line.strip() or last
            step = parse_step_line(line)
            if step and progress is not None:
                progress.value = (int(step["step"]) - 1) / int(step["total"])
                progress.description = step["text"][:40]
        process.wait()
        if process.returncode != 0:
            raise LabError(f"the lab stopped (exit {process.returncode}): {last}")
        if progress is not None:
            progress.value, progress.description = 1.0, "done"
        return newest_run(self.parameters.LAB)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict:
        bundle = {"text/html": self.static_html(), "text/plain": self.command()}
        try:
            widget_bundle = self.build()._repr_mimebundle_(include=include, exclude=exclude)
        except Exception:  # no ipywidgets front end: the static rendering is enough
            return bundle
        if isinstance(widget_bundle, tuple):
            widget_bundle = widget_bundle[0]
        bundle.update({k: v for k, v in (widget_bundle or {}).items() if k != "text/plain"})
        return bundle
