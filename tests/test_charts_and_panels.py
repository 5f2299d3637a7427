"""The offline renderer, the page-size guard, the panel's static face, script dedupe."""

import json
from types import SimpleNamespace

import altair as alt
import pandas as pd
import pytest

from labs import records
from labs.book import theme as charts
from labs.book.panel import LabPanel, command_arguments
from labs.book.sphinx_offline import _drop_duplicate_scripts, vegalite_minor_version
from labs.quorum import charts as quorum_charts
from labs.quorum import page as quorum
from labs.template.params import Parameters as TemplateParameters


def test_importing_charts_enables_the_book_theme_and_renderer():
    assert alt.renderers.active == charts.RENDERER_NAME
    assert alt.theme.active == charts.THEME_NAME


def test_renderer_emits_html_that_waits_for_the_local_bundle():
    chart = alt.Chart(pd.DataFrame({"x": [1, 2]})).mark_point().encode(x="x:Q").properties(
        title="two points")
    bundle = chart._repr_mimebundle_()
    bundle = bundle[0] if isinstance(bundle, tuple) else bundle
    html = bundle["text/html"]
    assert 'class="labs-chart"' in html and 'data-chart-title="two points"' in html
    assert "labs-vega-ready" in html and "window.vegaEmbed" in html
    assert "cdn" not in html.lower() and "https://" not in html.replace(
        "https://vega.github.io/schema", "")
    vegalite = next(k for k in bundle if k.startswith("application/vnd.vegalite"))
    assert bundle[vegalite]["mark"]["type"] == "point"


def test_renderer_escapes_script_closing_tags_in_data():
    chart = alt.Chart(pd.DataFrame({"label": ["</script><b>x</b>"]})).mark_text().encode(
        text="label:N")
    bundle = chart._repr_mimebundle_()
    html = (bundle[0] if isinstance(bundle, tuple) else bundle)["text/html"]
    assert html.count("</script>") == 1  # only the real closing tag


def test_oversized_specs_are_refused():
    big = pd.DataFrame({"x": range(4000), "label": ["x" * 200] * 4000})
    chart = alt.Chart(big).mark_point().encode(x="x:Q")
    with pytest.raises(ValueError, match="aggregate in pandas"):
        charts.storage_book_renderer(chart.to_dict())


def test_chart_controls_are_params_bound_to_inputs():
    spec = quorum_charts.availability_chart(quorum.availability_curves()).to_dict()
    bound = {p["name"]: p["bind"]["input"] for p in spec["params"]}
    assert bound == {"N": "range", "W": "range", "R": "range", "Z": "select", "Q": "select"}


def test_bundle_version_matches_altair():
    assert alt.SCHEMA_VERSION.lstrip("v").startswith(vegalite_minor_version())


def make_panel(title="Demo lab"):
    return LabPanel(TemplateParameters, fields=("profile", "block_kib"), chart=lambda run: None,
                    title=title, needs_root=True)


def test_static_panel_shows_the_command():
    html = make_panel().static_html()
    assert ("sudo .venv/bin/python -m labs run template --host local --profile full "
            "--seed 1 --block-kib 64") in html and "labs-panel-static" in html


def test_static_panel_says_what_the_lab_needs_and_how_long_a_quick_run_took():
    from labs import template, timings
    from labs.torn_pages import page as torn_page

    html = make_panel().static_html()
    assert f"<strong>Needs:</strong> {template.NEEDS}." in html
    assert "<strong>Time:</strong>" not in html  # the template's quick run was never timed
    seconds = timings.measured_quick_seconds("torn-pages", "local")
    assert seconds is not None
    torn = torn_page.panel().static_html()
    assert f"with the quick profile (--quick), {timings.about(seconds)} (as this quick" in torn


def test_static_panel_shows_backticked_commands_as_code_and_escapes_the_rest():
    from labs.book.panel import inline_code

    assert inline_code("a lab VM (`python -m labs vm up`) & <b>") == \
        "a lab VM (<code>python -m labs vm up</code>) &amp; &lt;b&gt;"
    assert inline_code("one ` alone") == "one ` alone"
    from labs.write_path import page as write_path_page

    assert "<code>python -m labs vm up</code>" in write_path_page.panel().static_html()


def test_static_panel_escapes_html():
    html = make_panel(title="<script>alert(1)</script>").static_html()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_panel_bundle_carries_both_faces():
    bundle = make_panel()._repr_mimebundle_()
    assert "text/html" in bundle
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_quorum_panel_command_is_the_cli_command():
    panel = quorum.panel()
    assert panel.command().startswith(".venv/bin/python -m labs run quorum --host local "
                                      "--profile full --seed 2017 --nodes 6 --write 4 --read 3")
    assert command_arguments(panel.command())[:2] == ["run", "quorum"]


def test_montecarlo_chart_draws_a_recorded_run():
    run = records.newest_run("quorum")
    spec = quorum_charts.montecarlo_chart(run.results).to_dict()
    assert len(spec["vconcat"]) == 2


def test_duplicate_scripts_are_dropped_once():
    def script(filename, **attributes):
        return SimpleNamespace(filename=filename, attributes=attributes)

    context = {"script_files": [script(None, body="const A = 1"), script("a.js"),
                                script("", body="const A = 1"), script("b.js")]}
    _drop_duplicate_scripts(None, "page", "page.html", context, None)
    assert [(s.filename, s.attributes) for s in context["script_files"]] == [
        (None, {"body": "const A = 1"}), ("a.js", {}), ("b.js", {})]


def test_chart_data_stays_small():
    for frame in (quorum.tolerance_grid(), quorum.availability_curves(),
                  quorum.kth_ack_distribution(), quorum.durability_curves()):
        assert len(json.dumps(frame.to_dict(orient="records"))) < charts.SPEC_LIMIT_BYTES


def test_live_panel_runs_records_and_redraws(runs_dir):
    panel = quorum.panel()
    box = panel.build()
    controls = {getattr(c, "description", ""): c for c in box.children}
    controls["trials"].value = 200_000
    controls["seed"].value = 11
    command_text = box.children[len(panel.fields) + 1]
    assert "--trials 200000" in command_text.value and "--seed 11" in command_text.value
    button, progress = box.children[-2].children
    button.click()
    assert progress.value == 1.0 and progress.description == "done"
    assert not button.disabled
    recorded = records.newest_run("quorum", runs_dir)
    assert recorded.meta["parameters"]["trials"] == 200_000
    assert recorded.meta["seed"] == 11


def test_live_panel_reports_bad_parameters_without_crashing(runs_dir):
    panel = quorum.panel()
    box = panel.build()
    controls = {getattr(c, "description", ""): c for c in box.children}
    controls["write"].value = 9  # more than 6 copies
    command_text = box.children[len(panel.fields) + 1]
    assert "not runnable" in command_text.value and "--write 9" in command_text.value
    button, progress = box.children[-2].children
    button.click()
    assert progress.description == "failed"
    assert records.list_runs("quorum", runs_dir) == []
